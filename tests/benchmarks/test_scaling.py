"""Smoke test of benchmarks/scaling.py at a tiny size: a real evolve run is timed per
round and per stage, and the report prints the late / early ratio as a positive number."""

import re
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scaling.py"

pytestmark = [pytest.mark.slow, pytest.mark.integration]

RATIO = re.compile(r"^ratio mean\(rounds (\d+)-(\d+)\) / mean\(rounds (\d+)-(\d+)\): (\S+) ", re.MULTILINE)


def test_a_tiny_run_prints_a_positive_ratio(bench, prefect_server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RATCHET_STORE", str(tmp_path))  # main() sets it; restored after the test
    monkeypatch.setattr(sys, "argv", ["scaling.py", "--rounds", "4", "--children", "2", "--cases", "8",
                                      "--store", str(tmp_path / "store")])
    bench.main()
    text = capsys.readouterr().out
    match = RATIO.search(text)
    assert match, text
    late_first, late_last, early_first, early_last = map(int, match.groups()[:4])
    assert (early_first, early_last, late_first, late_last) == (2, 2, 4, 4)
    ratio = float(match.group(5))
    assert ratio > 0
    for stage in ("sample", "execute", "score", "distill", "gate", "register"):
        assert re.search(rf"^{stage}\s+\d+\.\d+\s+\d+\.\d+", text, re.MULTILINE), stage


def test_windows_are_ten_rounds_from_round_two_and_to_the_last(bench):
    result = bench.Result("evolve", 60, 1.0, {r: float(r) for r in range(1, 61)})
    early, late = result.windows()
    assert (early[0], early[-1], late[0], late[-1]) == (2, 11, 51, 60)
    assert result.ratio() == pytest.approx(55.5 / 6.5)
