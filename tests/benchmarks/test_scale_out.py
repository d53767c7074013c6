"""benchmarks/scale_out.py runs the execute stage's work unit on real CLI Dask workers
(1, then 2) and prints throughput and each round against its lower bound."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "scale_out.py"


def test_scale_out_prints_both_worker_counts_and_the_targets():
    result = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1", "--ms", "5", "--cases", "4",
                             "--candidates", "4"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"^\s+[12]\s", line)]
    assert [row[0] for row in rows] == ["1", "2"]
    for row in rows:
        rate, round_s, bound_s = float(row[1]), float(row[3]), float(row[4])
        assert rate > 0 and round_s >= bound_s > 0  # a round never beats its own lower bound
    assert re.search(r"2 workers: [0-9.]+x the throughput of 1 \(target >= 1\.8\)", result.stdout)
