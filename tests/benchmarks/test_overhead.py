"""Smoke test of benchmarks/overhead.py at a tiny size: each cost gets one line with the
platform's evaluations, both wall times and their ratio, against the issue's targets."""

import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "overhead.py"

pytestmark = [pytest.mark.slow, pytest.mark.integration]

LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s+(?:warm|cold)\s+(\d+)\s+(\d+\.\d\d)\s+(\d+\.\d\d)\s+(\d+\.\d{3})\s+(\S+)\s*(ok|MISSED)?$")


def test_the_targets_are_the_issues(bench):
    assert bench.TARGETS == {1.0: 3.0, 10.0: 1.5, 100.0: 1.05}


def test_a_tiny_run_prints_one_sane_line_per_cost(bench, prefect_server, capsys):
    rows = bench.main(["--ms", "1", "--ms", "2", "--cases", "8", "--budget", "2", "--repeat", "3"])
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if LINE.match(line)]
    spreads = [line.split(":")[1].split() for line in out if "ratio of each run:" in line]
    assert [row["ms"] for row in rows] == [1.0, 2.0] and len(lines) == 2, lines
    for row, line in zip(rows, lines):
        ms, evaluations, platform_s, bare_s, ratio, target, verdict = LINE.match(line).groups()
        # seed + 2 children, each on 6 train/select cases (8 cases: 4 train, 2 select, 2
        # holdout); every accepted champion also runs its 2 holdout cases
        assert int(evaluations) == row["evaluations"] and 18 <= row["evaluations"] <= 18 + 3 * 2
        assert float(platform_s) > row["bare_s"] > row["evaluations"] * float(ms) / 1000  # a case spins its ms
        assert row["ratio"] == pytest.approx((row["platform_s"] / row["evaluations"]) / (row["bare_s"] / row["evaluations"]))
        assert float(ratio) == pytest.approx(row["ratio"], abs=1e-3)
        assert len(row["ratios"]) == 3 and sorted(row["ratios"])[1] == row["ratio"]  # the median of the three
    assert [[float(r) for r in spread] for spread in spreads] == [pytest.approx(row["ratios"], abs=1e-3) for row in rows]
    assert (rows[0]["target"], lines[0].split()[-1] in ("ok", "MISSED")) == (3.0, True)
    assert rows[1]["target"] is None and lines[1].split()[-1] == "-"
    assert {row["sandbox"] for row in rows} == {"warm"}


def test_cold_measures_each_cost_also_without_prestarted_sandboxes(bench, prefect_server, capsys):
    rows = bench.main(["--ms", "1", "--cases", "8", "--budget", "2", "--cold", "--repeat", "1"])
    assert [(row["ms"], row["sandbox"], row["target"]) for row in rows] == [(1.0, "cold", None), (1.0, "warm", 3.0)]
    assert rows[0]["evaluations"] == rows[1]["evaluations"]  # the same search, the same evaluations
