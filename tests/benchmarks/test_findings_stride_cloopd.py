"""Smoke test of benchmarks/findings_stride_cloopd.py at its --quick sizes on the real
opd flow: every arm runs and reads back finite figures, and the report prints a paired
row for every comparison."""

import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "findings_stride_cloopd.py"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_reads_every_arm_back_and_reports_paired_rows(bench, prefect_server, tmp_path):
    runs = bench.run_all(str(tmp_path), [0], bench.QUICK)
    assert sorted(r.arm for r in runs) == sorted([*bench.STRIDE_ARMS, *bench.CLOOPD_ARMS])
    for r in runs:
        assert r.gen_tokens > 0 and r.teacher_tokens > 0 and r.wall_s > 0 and 0 <= r.select_acc <= 1
        assert math.isfinite(r.late_kl)
        assert (0 <= r.episode_acc <= 1) if r.arm in bench.STRIDE_ARMS else math.isnan(r.episode_acc)
        assert (r.actor_tokens == 0) if r.arm in bench.STRIDE_ARMS else r.actor_tokens >= r.gen_tokens
    passes = {r.arm: r.actor_tokens / r.gen_tokens for r in runs if r.arm in bench.CLOOPD_ARMS}
    assert passes == {"passes_1": 1.0, "passes_2": 2.0, "passes_3": 3.0}  # one step: actor = passes x tokens
    report = bench.report(runs, [0], bench.QUICK)
    assert report.count("| stride vs full OPD |") == 6 and report.count("| CLOOPD 1 vs 3 passes |") == 5
