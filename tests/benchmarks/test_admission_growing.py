"""Smoke test of benchmarks/admission_growing.py at tiny sizes (1 seed, 2 steps, 5
toolsim instances per template): every arm runs the real flow, the SQL rollback and
validation counts agree with the stored decisions, and the report prints its tables."""

from pathlib import Path

import pytest

from storage.store import open_store

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "admission_growing.py"

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def measured(bench, prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("admission_growing"))
    return store_uri, bench.measure(store_uri, [0], 2, 5, 4)


def test_every_arm_starts_from_the_same_scaffold_and_gates_as_configured(bench, measured):
    _, runs = measured
    assert [r.arm for r in runs] == list(bench.ARMS)
    assert len({r.seed_test_success for r in runs}) == 1  # same scaffold, same test cases
    by_arm = {r.arm: r for r in runs}
    assert by_arm["no_gate"].validations == by_arm["no_gate"].rollbacks == 0
    assert by_arm["gate_every_1"].validations >= by_arm["gate_every_8"].validations >= 1
    assert all(0.0 <= r.test_success <= 1.0 and r.size >= 0 for r in runs)


def test_the_sql_counts_match_the_stored_decisions(measured):
    store_uri, runs = measured
    decisions = open_store(store_uri).read_rows("gate_decisions")
    for run in runs:
        mine = [d for d in decisions if d.run_id == f"{run.arm}-s{run.seed}".replace("_", "-")]
        assert run.rollbacks == sum(d.decision == "rollback" for d in mine)
        assert run.validations == sum(d.gate == "growing_harness_validation" for d in mine)


def test_the_report_prints_the_findings(bench, measured):
    _, runs = measured
    text = bench.report(runs, [0])
    assert text.count("| gate_every_1 vs no_gate |") == 4 and "| no_gate | 0 | 2 |" in text
