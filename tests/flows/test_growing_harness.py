"""The growing_harness loop end to end on the real engine, store, sandbox and toolsim: a
gated run whose first patches are rolled back, a resumed copy of it, and a gate-off run."""

import json

import pytest
from mlflow import MlflowClient

from flows.growing_harness import growing_harness
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from storage.tracking import default_tracking_uri

pytestmark = [pytest.mark.integration]

TABLES = ("candidates", "executions", "scores", "steps", "distillates", "gate_decisions", "registry")
GATE = "growing_harness_validation"


def small_config(**grow) -> RunConfig:
    # seed 1: the first two patches lower validation success, so the gate rolls them back
    return RunConfig(loop="growing_harness", suite="toolsim", budget=3, seed=1, workers=2, tracking=False,
                     suite_params={"instances_per_template": 10, "seed": 1},
                     grow={"window_size": 8, "gate_every": 1, **grow})


def snapshot(store) -> dict[str, list]:
    return {table: sorted(json.dumps(r.model_dump(exclude={"event_at", "wall_s", "cpu_s", "peak_rss_mb"}),
                                     sort_keys=True, default=str) for r in store.read_rows(table))
            for table in TABLES}


def states(store, run_id: str, stage: str) -> dict[int, dict]:
    return {d.round: json.loads(d.content) for d in store.read_rows("distillates", run_id)
            if d.kind == "loop_state" and d.status == stage}


@pytest.fixture(scope="module")
def runs(prefect_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("growing_harness")
    gated = growing_harness(config=small_config().model_copy(update={"tracking": True}), store_uri=str(root / "a"),
                            run_id="grow-a")
    off = growing_harness(config=small_config(gate_every=0).model_copy(update={"budget": 2}),
                          store_uri=str(root / "off"), run_id="grow-off")
    return root, gated, off


def test_every_validation_is_a_decision_and_rollback_iff_below_the_last_accepted(runs):
    root, summary, _ = runs
    store = open_store(str(root / "a"))
    rows = sql(store, f"SELECT round, decision, select_score, baseline_score, evidence_json FROM gate_decisions "
                      f"WHERE run_id = 'grow-a' AND gate = '{GATE}' ORDER BY round").to_pylist()
    assert [r["round"] for r in rows] == [1, 2, 3]  # gate_every=1: a check after each step that fixed a task
    for row in rows:
        evidence = json.loads(row["evidence_json"])
        assert row["decision"] == ("rollback" if row["select_score"] < row["baseline_score"] else "accept")
        assert evidence["rolled_back"] == (row["decision"] == "rollback")
    assert summary["rollbacks"] == sum(r["decision"] == "rollback" for r in rows) >= 1
    assert summary["validations"] == 3


def test_a_rollback_restores_the_harness_window_cursor_and_memories_of_the_last_accepted(runs):
    root, _, _ = runs
    store = open_store(str(root / "a"))
    checked, settled = states(store, "grow-a", "checked"), states(store, "grow-a", "settled")
    decisions = {d.round: d for d in store.read_rows("gate_decisions", "grow-a") if d.gate == GATE}
    for step, decision in decisions.items():
        if decision.decision == "rollback":
            assert checked[step]["current"] == settled[step]["accepted"]  # the whole state, not just the harness
            assert checked[step]["current"] != settled[step]["current"]
            assert json.loads(decision.evidence_json)["restored"] == settled[step]["accepted"]
        else:
            assert checked[step]["current"] == checked[step]["accepted"] == settled[step]["current"]
        assert checked[step]["fixes_since_check"] == 0
    restored = [d for d in store.read_rows("distillates", "grow-a")
                if d.kind == "window_event" and d.status == "restore"]
    assert {d.round for d in restored} <= {s for s, d in decisions.items() if d.decision == "rollback"}


def test_window_events_follow_the_window_and_patches_are_kept_only_when_they_solve(runs):
    root, _, _ = runs
    store = open_store(str(root / "a"))
    events = sql(store, "SELECT round AS step, content AS task_id, status AS action FROM distillates "
                        "WHERE run_id = 'grow-a' AND kind = 'window_event'").to_pylist()
    assert {e["action"] for e in events} >= {"enter", "solved"}
    solved = {(e["step"], e["task_id"]) for e in events if e["action"] == "solved"}
    edits = {(d.round, d.status): d for d in store.read_rows("distillates", "grow-a") if d.kind == "edit"}
    for (step, status), row in edits.items():
        if status in ("kept", "discarded"):
            assert (status == "kept") == any(s == step for s, _ in solved)
            assert set(json.loads(row.content)["functions_touched"])
    candidates = [c for c in store.read_rows("candidates", "grow-a") if c.round > 0]
    assert candidates and all(c.proposer == "rules" and len(c.parent_ids) == 1 for c in candidates)


def test_the_final_harness_is_the_last_accepted_version_registered_with_holdout(runs):
    root, summary, _ = runs
    store = open_store(str(root / "a"))
    (registered,) = store.read_rows("registry", "grow-a")
    accepted = [d for d in store.read_rows("gate_decisions", "grow-a") if d.decision == "accept"]
    last = max(accepted, key=lambda d: (d.round, d.gate == GATE))
    assert registered.candidate_id == last.candidate_id == summary["candidate_id"]
    assert registered.holdout_score is not None and registered.select_score == last.select_score
    holdout = {e.candidate_id for e in store.read_rows("executions", "grow-a") if e.split == "holdout"}
    assert holdout == {registered.candidate_id}
    assert summary["test_success"] >= summary["seed_test_success"]


def test_every_candidate_runs_a_case_at_most_once(runs):
    root, _, _ = runs
    executions = open_store(str(root / "a")).read_rows("executions", "grow-a")
    assert len({(e.candidate_id, e.case_id) for e in executions}) == len(executions)


def test_rerunning_the_same_run_adds_no_rows(runs):
    root, first, _ = runs
    store = open_store(str(root / "a"))
    before = snapshot(store)
    again = growing_harness(config=small_config(), store_uri=str(root / "a"), run_id="grow-a")
    assert snapshot(store) == before and again == first


def test_a_run_killed_in_step_2_resumes_to_the_same_tables(runs, tmp_path):
    import shutil

    root, first, _ = runs
    shutil.copytree(root / "a", tmp_path / "cut")
    store = open_store(str(tmp_path / "cut"))
    for step in (2, 3):  # as if killed after step 2's patch ran on the window (executions kept)
        for stage in ("settled", "checked") if step == 2 else ("filled", "settled", "checked"):
            store.delete_part("distillates", "grow-a", "grow", f"{stage}-s{step:04d}")
        store.delete_part("gate_decisions", "grow-a", "validate", f"check-s{step:04d}")
    store.delete_part("gate_decisions", "grow-a", "validate", "check-final")
    store.delete_part("registry", "grow-a", "register", "final")
    resumed = growing_harness(config=small_config(), store_uri=str(tmp_path / "cut"), run_id="grow-a")
    assert snapshot(store) == snapshot(open_store(str(root / "a")))
    assert resumed == first


def test_with_the_gate_off_every_kept_patch_is_accepted_unvalidated(runs):
    root, _, summary = runs
    store = open_store(str(root / "off"))
    decisions = store.read_rows("gate_decisions", "grow-off")
    assert sorted(d.gate for d in decisions) == ["growing_harness_off", "seed"]
    assert summary["validations"] == 0 and summary["rollbacks"] == 0
    kept = [d for d in store.read_rows("distillates", "grow-off") if d.kind == "edit" and d.status == "kept"]
    assert kept and summary["candidate_id"] == max(kept, key=lambda d: d.round).distillate_id
    assert not [e for e in store.read_rows("executions", "grow-off") if e.split == "select" and
                e.candidate_id == summary["candidate_id"]]


def test_each_validated_harness_is_logged_to_mlflow_once_with_its_decision(runs):
    root, _, _ = runs
    store = open_store(str(root / "a"))
    client = MlflowClient(default_tracking_uri(store))
    experiment = client.get_experiment_by_name("ratchet/growing_harness").experiment_id
    logged = client.search_runs(experiment, filter_string="tags.`ratchet.of_run_id` = 'grow-a'")
    by_candidate = {r.data.tags["ratchet.candidate_id"]: r for r in logged}
    assert len(by_candidate) == len(logged)  # one nested run per candidate, however often it is logged
    validated = [d for d in store.read_rows("gate_decisions", "grow-a") if d.gate == GATE]
    assert {d.candidate_id for d in validated} <= set(by_candidate)
    (registered,) = store.read_rows("registry", "grow-a")
    metrics = by_candidate[registered.candidate_id].data.metrics
    assert metrics["holdout_success"] == pytest.approx(registered.holdout_score)
