"""Smoke test of benchmarks/admission_medrsi.py at its --quick size (1 seed, 2 rounds):
both arms run the real flow, the funnel obeys each arm's rule, and the report prints."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "admission_medrsi.py"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_reports_the_funnel_and_the_paired_rows(bench, prefect_server, tmp_path):
    results, report = bench.measure(tmp_path, 1, 2, *bench.QUICK)
    (slow,), (now,) = results["slow"], results["immediate"]
    # two rounds cannot complete a 3-batch trial: slow registration registers nothing yet
    assert slow["registered"] == 0 and slow["stable_versions"] == 1 and slow["holdout_drops"] == 0
    assert slow["test_success"] == slow["seed_test_success"]
    # the ablation registers every admitted tool at once
    assert now["registered"] == now["admitted"] and now["stable_versions"] == 1 + now["admitted"]
    assert now["in_pool"] == 0 and slow["in_pool"] == slow["admitted"]
    assert "| slow | " in report and "| immediate | " in report
    assert report.count("slow vs immediate registration") == 3 and "stable set vs seed harness" in report
