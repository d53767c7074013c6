"""Smoke test of benchmarks/load.py at a tiny size: the same evolve run on 2 local workers
and on a real Dask cluster of 2 CLI workers loses and duplicates nothing and agrees row for row."""

import re
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "load.py"

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROW = re.compile(r"^(2 local workers|Dask, 2 CLI workers)\s+(\d+)\s+(\d+)\s+.*\s(\d+)\s+(\d+)$", re.MULTILINE)


def test_a_tiny_load_loses_nothing_on_either_placement(bench, prefect_server, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["load.py", "--candidates", "2", "--cases", "4", "--ms", "1"])
    bench.main()
    text = capsys.readouterr().out
    rows = ROW.findall(text)
    assert [r[0] for r in rows] == ["2 local workers", "Dask, 2 CLI workers"], text
    for _, evaluations, candidates, lost, duplicated in rows:
        assert int(candidates) == 3 and int(evaluations) == 3 * 3  # seed + 2 children, 2 train + 1 select each
        assert (lost, duplicated) == ("0", "0")
    assert "same executions and decisions on both placements: True" in text
