"""Smoke test of benchmarks/gpu_check.py in its CPU-only quick mode: it names the device,
prints a finite positive tokens/s and one row per step, finds CPU equal to CPU (with
gradient to compare) and exits 0; the tolerance test is relative, floored at 1."""

import math
import re
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


def test_quick_cpu_run_prints_device_throughput_and_equal_losses(bench, capsys):
    assert bench.main(["--quick", "--cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("device: cpu (--cpu)")
    tokens_per_s = float(re.search(r"([\d,]+) generated tokens/s", out).group(1).replace(",", ""))
    assert math.isfinite(tokens_per_s) and tokens_per_s > 0
    rows = [line.split() for line in out.splitlines() if re.match(r"\s+\d+ ", line)]
    assert [int(r[0]) for r in rows] == [0, 1, 2]
    assert all(r[1] == r[2] and r[3] == r[4] for r in rows)
    assert any(float(r[3]) > 0 for r in rows)  # the shaped reward gives the quick warm start gradient
    assert out.rstrip().endswith("equal")


def test_within_is_relative_above_one_and_absolute_below(bench):
    assert bench.within(1000.0, 1000.5, 1e-3) and not bench.within(1000.0, 1002.0, 1e-3)
    assert bench.within(1e-8, 5e-4, 1e-3) and not bench.within(0.0, 2e-3, 1e-3)
