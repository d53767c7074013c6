"""Smoke test of benchmarks/admission_self_healing.py at tiny sizes (1 seed, 2 rounds,
5 toolsim instances per template): every arm runs the real flow, the SQL count of
rejected proposals agrees with the stored decisions, and the report prints its tables."""

import json
from pathlib import Path

import pytest

from storage.store import open_store

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "admission_self_healing.py"

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def measured(bench, prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("admission"))
    return store_uri, bench.measure(store_uri, [0], 2, 5)


def test_every_arm_has_a_timeline_from_the_seed_harness(bench, measured):
    _, runs = measured
    assert [r.arm for r in runs] == list(bench.ARMS)
    for run in runs:
        assert len(run.select) == len(run.test) == len(run.active) == 3
        assert run.active[0] == 0 and all(0.0 <= v <= 1.0 for v in run.select + run.test)
    # round 0 is the seed harness in every arm: same cases, same scores
    assert len({(r.select[0], r.test[0]) for r in runs}) == 1


def test_the_sql_rejection_counts_match_the_stored_decisions(measured):
    store_uri, runs = measured
    decisions = open_store(store_uri).read_rows("gate_decisions")
    for run in runs:
        run_id = f"{run.arm}-s{run.seed}".replace("+", "-")
        rejected = [json.loads(d.evidence_json) for d in decisions if d.run_id == run_id
                    and d.gate == "paired_replay" and d.decision == "reject"]
        replayed = [e for e in rejected if e["path"] == "replay"]
        assert run.rejected == len(replayed)
        assert run.fixed_but_broke == sum(e["fixed_trigger"] and e["broke_protected"] for e in replayed)
        assert run.not_fixed == sum(not e["fixed_trigger"] for e in replayed)
        assert run.broke == sum(e["broke_protected"] for e in replayed)
    assert next(r for r in runs if r.arm == "accept_all").rejected == 0


def test_the_report_prints_the_findings(bench, measured):
    _, runs = measured
    text = bench.report(runs, [0], 2)
    assert "(a) replay-rejected proposals" in text and "| 2 |" in text
    assert text.count("| (c) gate") == 3 and text.count("| (b) library guard") == 3
