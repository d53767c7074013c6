"""Smoke test of benchmarks/admission_designer.py at its --quick size (1 seed, 1 round,
tiny suite): every mode runs the real flow, the counts agree with the store, and the
report prints its tables."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "admission_designer.py"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_reports_counts_and_paired_rows(bench, prefect_server, tmp_path):
    results, report = bench.measure(tmp_path, 1, 1, *bench.QUICK)
    assert set(results) == {"expansion_only", "revision_only", "both"}
    for mode, (run,) in results.items():
        assert 0.0 <= run["seed_test_success"] <= 1.0 and 0.0 <= run["test_success"] <= 1.0
        assert run["accepted"] == sum(run["published"].values())
        assert run["rejected"] == sum(run["rejected_by_pool"].values())
    # one round of 8 requests cannot bring any gap to 3 occurrences: expansion writes nothing
    assert results["expansion_only"][0]["accepted"] + results["expansion_only"][0]["rejected"] == 0
    assert results["expansion_only"][0]["test_success"] == results["expansion_only"][0]["seed_test_success"]
    assert "| both vs revision_only | test success |" in report and "| expansion_only |" in report
