"""The designer_rsi loop end to end on the real engine, store, sandbox and toolsim."""

import json

import pytest
from pydantic import ValidationError

from flows.designer_rsi import designer_rsi
from schemas.admission import DesignerConfig
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "steps", "distillates", "gate_decisions", "registry")


def small_config(**designer) -> RunConfig:
    return RunConfig(loop="designer_rsi", suite="toolsim", budget=3, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 16},
                     designer={"traffic_batch": 12, "replay_targets": 4, "replay_successes": 3, **designer})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("designer_rsi")
    summary = designer_rsi(config=small_config(), store_uri=str(root / "a"), run_id="designer-a")
    return open_store(str(root / "a")), summary


def test_every_edit_answers_a_pool_record_over_its_threshold_and_is_gated(run):
    store, summary = run
    records = {}
    for row in store.read_rows("distillates"):
        if row.kind in ("gap", "failing_item"):
            records.setdefault(row.distillate_id, []).append(row)
    skills = [r for r in store.read_rows("distillates") if r.kind == "skill"]
    proposed = [s for s in skills if s.status == "proposed"]
    assert proposed, "three batches of 12 requests should yield at least one edit"
    decisions = {d.candidate_id: d for d in store.read_rows("gate_decisions") if d.gate == "designer_rsi_replay"}
    assert set(decisions) == {s.distillate_id for s in proposed}
    for skill in proposed:
        content = json.loads(skill.content)
        history = records[content["record_id"]]
        counted = max(r.support for r in history if r.round <= skill.round)
        assert counted >= (3 if content["pool"] == "expand" else 2)
        decision = decisions[skill.distillate_id]
        evidence = json.loads(decision.evidence_json)
        assert evidence["signature"] == content["signature"] and evidence["rule"]["improvement_on"] == "any"
        replayed = set(evidence["replayed"]["trigger"]) | set(evidence["replayed"]["protected"])
        assert replayed == set(content["replay"]["targets"]) | set(content["replay"]["successes"])
        admitted = bool(decision.improved_cases) and not decision.regressed_cases
        assert decision.decision == ("accept" if admitted else "reject")
        final = {s.status for s in skills if s.distillate_id == skill.distillate_id} - {"proposed"}
        assert final == {"published" if admitted else "rejected"}
        assert any(r.status == "published" for r in history) == admitted
    assert sum(summary["published"].values()) == sum(d.decision == "accept" for d in decisions.values())


def test_admitted_libraries_are_champions_with_holdout_and_the_report_has_test_success(run):
    store, summary = run
    registry = sorted(store.read_rows("registry"), key=lambda r: r.version)
    accepted = [d for d in store.read_rows("gate_decisions") if d.decision == "accept"]
    assert [r.candidate_id for r in registry] == [d.candidate_id for d in sorted(accepted, key=lambda d: d.round)]
    holdout = {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"}
    assert holdout == {r.candidate_id for r in registry} and all(r.holdout_score is not None for r in registry)
    test_runs = {e.candidate_id for e in store.read_rows("executions") if e.split == "test"}
    assert test_runs == {registry[0].candidate_id, registry[-1].candidate_id}
    assert summary["candidate_id"] == registry[-1].candidate_id and summary["test_success"] is not None


def test_a_candidate_runs_each_case_once_and_replays_are_paired_with_the_champion(run):
    store, _ = run
    executions = store.read_rows("executions")
    pairs = [(e.candidate_id, e.case_id) for e in executions]
    assert len(pairs) == len(set(pairs)) and len({e.execution_id for e in executions}) == len(executions)
    ran = set(pairs)
    for d in store.read_rows("gate_decisions"):
        for case in json.loads(d.evidence_json).get("cases", []):
            assert (d.candidate_id, case["case_id"]) in ran and (d.baseline_id, case["case_id"]) in ran


def test_gap_pool_and_decisions_answer_in_sql(run):
    store, _ = run
    pool = sql(store, "select kind, count(*) as n from distillates where kind in ('gap', 'failing_item') "
                      "group by kind order by kind").to_pylist()
    assert {r["kind"] for r in pool} <= {"gap", "failing_item"} and sum(r["n"] for r in pool) > 0
    why = sql(store, "select decision, json_extract_string(evidence_json, '$.pool') as pool, reason "
                     "from gate_decisions where gate = 'designer_rsi_replay'").to_pylist()
    assert why and all(r["pool"] in ("expand", "deepen") and r["reason"].startswith(r["decision"]) for r in why)


def test_rerunning_the_same_run_adds_no_rows(run):
    store, summary = run
    before = counts(store)
    again = designer_rsi(config=small_config(), store_uri=store.root_uri, run_id="designer-a")
    assert counts(store) == before
    assert again == summary



def test_a_run_cut_before_its_last_gate_resumes_to_the_same_decision(run):
    store, summary = run
    decided = max(d.round for d in store.read_rows("gate_decisions"))
    key = f"r{decided:04d}"
    before = sorted((d.round, d.candidate_id, d.decision, d.reason) for d in store.read_rows("gate_decisions"))
    pool_before = sorted((r.distillate_id, r.round, r.status, r.support) for r in store.read_rows("distillates"))
    # as if the process died after the last replay: no decision, no registration, no status events
    for table, stage in (("gate_decisions", "gate"), ("registry", "register"), ("distillates", "register")):
        store.delete_part(table, "designer-a", stage, key)
    again = designer_rsi(config=small_config(), store_uri=store.root_uri, run_id="designer-a")
    assert sorted((d.round, d.candidate_id, d.decision, d.reason) for d in store.read_rows("gate_decisions")) == before
    pool_after = sorted((r.distillate_id, r.round, r.status, r.support) for r in store.read_rows("distillates"))
    assert pool_after == pool_before
    assert again["candidate_id"] == summary["candidate_id"] and again["test_success"] == summary["test_success"]

def test_bad_designer_config_names_the_field():
    with pytest.raises(ValidationError, match="mode"):
        DesignerConfig(mode="deepen_only")
    with pytest.raises(ValidationError, match="traffic_batch"):
        small_config(traffic_batch=0)


def test_the_loop_is_registered_for_the_cli():
    from flows import LOOPS, PROGRESS
    from schemas.loops import LOOP_SPECS

    assert LOOPS["designer_rsi"] is designer_rsi and LOOP_SPECS["designer_rsi"].default_suite == "toolsim"
    assert PROGRESS["designer_rsi"](small_config()) == 4
