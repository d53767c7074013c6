"""The self_healing loop end to end on the real engine, store, sandbox and toolsim."""

import json

import pytest
from mlflow import MlflowClient

from flows.self_healing import self_healing
from schemas.admission import HealConfig
from schemas.configs import RunConfig
from schemas.ids import content_id
from storage.catalog import sql
from storage.store import open_store
from storage.tracking import default_tracking_uri
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import harness_document
from tasks.loops.self_healing.heal_logic import ablations
from tasks.runtime.context import RunRef

pytestmark = [pytest.mark.integration]

TABLES = ("candidates", "executions", "scores", "steps", "distillates", "gate_decisions", "registry")


def small_config(**overrides) -> RunConfig:
    base = dict(loop="self_healing", suite="toolsim", budget=4, seed=0, workers=2, tracking=False,
                suite_params={"instances_per_template": 10})
    return RunConfig(**{**base, **overrides})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


def train_success(store, candidate_id: str) -> float:
    values = [s.value for s in store.read_rows("scores") if s.candidate_id == candidate_id
              and s.split == "train" and s.metric == "success"]
    assert len(values) == 16  # every train case, each run once
    return sum(values) / len(values)


@pytest.fixture(scope="module")
def runs(prefect_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("self_healing")
    first = self_healing(config=small_config(), store_uri=str(root / "a"), run_id="heal-a")
    second = self_healing(config=small_config(), store_uri=str(root / "b"), run_id="heal-b")
    return root, first, second


def test_rules_from_the_proposer_are_gated_by_paired_replay(runs):
    root, summary, _ = runs
    store = open_store(str(root / "a"))
    candidates = store.read_rows("candidates")
    seed = [c for c in candidates if c.round == 0]
    assert [c.operator for c in seed] == ["seed"]
    healed = [c for c in candidates if c.round > 0 and c.operator != "ablate"]
    assert len(healed) == 4 and all(c.proposer == "rules" for c in healed)
    # the guard (default: every 3 admissions) ablated the set once; its harnesses are candidates too
    assert {c.proposer for c in candidates if c.operator == "ablate"} == {"library_guard"}
    assert {c.operator for c in healed} <= {"precondition", "retry_on_error", "paginate", "switch_tool",
                                            "reread", "follow_up", "gap_skill", "extract_skill",
                                            "revise_rule", "remove_rule"}
    decisions = [d for d in store.read_rows("gate_decisions") if d.gate == "paired_replay"]
    assert len(decisions) == 4
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        assert evidence["path"] == "replay" and "fixed_trigger" in evidence and "broke_protected" in evidence
        assert 1 <= len(evidence["replayed"]["trigger"]) <= 3 and len(evidence["replayed"]["protected"]) <= 2
        assert d.decision == ("accept" if evidence["fixed_trigger"] and not evidence["broke_protected"] else "reject")
    assert summary["accepted_rules"] >= 1
    rules = {}
    for row in store.read_rows("distillates"):
        if row.kind == "rule":
            rules.setdefault(row.distillate_id, []).append(row.status)
    by_candidate = {d.candidate_id: d.decision for d in decisions}
    for candidate_id, statuses in rules.items():
        assert statuses[0] == "proposed" or "proposed" in statuses
        assert ("active" if by_candidate[candidate_id] == "accept" else "retired") in statuses


def test_an_accepted_rule_raises_train_success_over_the_seed(runs):
    root, summary, _ = runs
    store = open_store(str(root / "a"))
    registry = sorted(store.read_rows("registry"), key=lambda r: r.version)
    seed_id, champion_id = registry[0].candidate_id, registry[-1].candidate_id
    assert seed_id != champion_id and summary["candidate_id"] == champion_id
    assert train_success(store, champion_id) > train_success(store, seed_id)
    assert summary["train_success"] == train_success(store, champion_id)
    # holdout scores only for registered champions, and all of them have one
    holdout = {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"}
    assert holdout == {r.candidate_id for r in registry}
    assert all(r.holdout_score is not None for r in registry)
    assert summary["holdout_score"] >= summary["seed_holdout_success"]


def test_every_execution_is_unique_and_ok_executions_have_steps(runs):
    root, _, _ = runs
    store = open_store(str(root / "a"))
    executions = store.read_rows("executions")
    assert len({e.execution_id for e in executions}) == len(executions)
    stepped = {s.execution_id for s in store.read_rows("steps")}
    assert stepped == {e.execution_id for e in executions if e.status == "ok" and e.split != "holdout"}


def test_same_seed_same_candidates_and_decisions(runs):
    root, first, second = runs
    a, b = open_store(str(root / "a")), open_store(str(root / "b"))
    assert sorted((c.round, c.candidate_id, c.operator) for c in a.read_rows("candidates")) == \
        sorted((c.round, c.candidate_id, c.operator) for c in b.read_rows("candidates"))
    assert sorted((d.round, d.candidate_id, d.decision) for d in a.read_rows("gate_decisions")) == \
        sorted((d.round, d.candidate_id, d.decision) for d in b.read_rows("gate_decisions"))
    assert first["candidate_id"] == second["candidate_id"]


def test_rerunning_the_same_run_adds_no_rows(runs):
    root, first, _ = runs
    store = open_store(str(root / "a"))
    before = counts(store)
    again = self_healing(config=small_config(), store_uri=str(root / "a"), run_id="heal-a")
    assert counts(store) == before
    assert again["candidate_id"] == first["candidate_id"]


def test_no_table_holds_a_key_twice(runs):
    from schemas.tables import TABLES

    root, _, _ = runs
    store = open_store(str(root / "a"))
    for name, spec in TABLES.items():
        keys = [tuple(getattr(r, c) for c in spec.key) for r in store.read_rows(name)]
        assert len(keys) == len(set(keys)), name


@pytest.fixture(scope="module")
def guarded(prefect_server, tmp_path_factory):
    """accept_all admits every rule (so some are useless); the guard, every 2 admissions,
    retires them. Tracked in MLflow (SQLite under the store)."""
    root = tmp_path_factory.mktemp("self_healing_guard")
    config = small_config(tracking=True, heal=HealConfig(accept_all=True, guard_interval=2))
    summary = self_healing(config=config, store_uri=str(root), run_id="heal-guard")
    return root, config, summary


def test_accept_all_admits_every_rule_and_records_the_reason(guarded):
    root, _, summary = guarded
    decisions = [d for d in open_store(str(root)).read_rows("gate_decisions")
                 if d.round > 0 and d.gate != "library_guard"]
    assert len(decisions) == 4 and all(d.gate == "accept_all" and d.decision == "accept" for d in decisions)
    assert all(d.reason.startswith("accept_all ablation") for d in decisions)
    would = [json.loads(d.evidence_json)["replay_decision"] for d in decisions]
    assert "reject" in would  # the ablation admitted a rule the replay gate would have rejected
    assert summary["accepted_rules"] == 4 and summary["rejected_rules"] == 0


def test_guard_rounds_are_queryable_and_a_retirement_registers_the_smaller_set(guarded):
    root, _, summary = guarded
    store = open_store(str(root))
    guard = sql(store, """
        SELECT d.round, d.decision, d.baseline_id, d.candidate_id, json_extract_string(d.evidence_json, '$.retired')
               AS retired, r.version
        FROM gate_decisions d LEFT JOIN registry r ON r.decision_id = d.decision_id
        WHERE d.gate = 'library_guard' ORDER BY d.round, d.decision""").to_pylist()
    assert {g["round"] for g in guard} == {2, 4}  # every 2 admissions of the 4
    for round_index in (2, 4):  # each guard round ends with a step that keeps the set
        assert [g["decision"] for g in guard if g["round"] == round_index][0] == "accept"
    retirements = [g for g in guard if g["decision"] == "reject"]
    assert summary["guard_retired"] == len(retirements) >= 1
    ref, rules = RunRef(store_uri=str(root), run_id="heal-guard"), store.read_rows("distillates")
    for g in retirements:
        assert g["version"] is not None  # the smaller set is registered as champion, and it is exactly
        smaller = ablations(harness_document(ref, g["baseline_id"]))[g["retired"]]  # the old one less the member
        assert g["candidate_id"] == content_id(harness_source(smaller))
        retired = [r for r in rules if r.status == "retired" and r.round == g["round"]
                   and json.loads(r.content)["target"] == g["retired"].split(":", 1)[1]]
        assert retired  # the member's rule moved to retired
    registry = sorted(store.read_rows("registry"), key=lambda r: r.version)
    assert all(r.holdout_score is not None for r in registry)


def test_each_round_candidate_is_logged_to_mlflow_once(guarded):
    root, config, _ = guarded
    client = MlflowClient(default_tracking_uri(open_store(str(root))))
    runs = client.search_runs(client.get_experiment_by_name(f"ratchet/{config.loop}").experiment_id,
                              filter_string="tags.`ratchet.of_run_id` = 'heal-guard'")
    logged = {r.data.tags["ratchet.candidate_id"]: r for r in runs}
    assert len(logged) == len(runs)
    rounds = [c for c in open_store(str(root)).read_rows("candidates") if c.operator != "ablate"]
    for candidate in rounds:
        run = logged[candidate.candidate_id]
        assert run.data.params["operator"] == candidate.operator and run.data.params["round"] == str(candidate.round)
        assert run.data.tags["decision"] == "accept" and "n_cases" in run.data.metrics
    assert any("guard_retired" in r.data.tags for r in runs)


def test_rerunning_a_guarded_run_adds_no_rows_and_no_mlflow_runs(guarded):
    root, config, first = guarded
    store = open_store(str(root))
    before = counts(store)
    client = MlflowClient(default_tracking_uri(store))
    experiment = client.get_experiment_by_name(f"ratchet/{config.loop}").experiment_id
    n_runs = len(client.search_runs(experiment))
    again = self_healing(config=config, store_uri=str(root), run_id="heal-guard")
    assert counts(store) == before and again == first
    assert len(client.search_runs(experiment)) == n_runs


def test_an_evaluation_cap_ends_the_run_after_a_round_and_a_raised_cap_continues_it(prefect_server, tmp_path):
    from tasks.runtime.lifecycle import stored_config

    store_uri = str(tmp_path / "capped")
    self_healing(config=small_config(max_evaluations=1), store_uri=store_uri, run_id="heal-capped")
    store = open_store(store_uri)
    seeded = len(store.read_rows("executions", "heal-capped"))  # round 0: the seed on its cases
    latest = max(store.read_rows("runs", "heal-capped"), key=lambda r: r.event_at)
    assert latest.status == "budget_exhausted"
    assert latest.error == f"budget cap reached: {seeded} evaluations of max_evaluations=1, before round 1"
    assert {c.round for c in store.read_rows("candidates", "heal-capped")} == {0}
    assert [r.candidate_id for r in store.read_rows("registry", "heal-capped")] == [
        c.candidate_id for c in store.read_rows("candidates", "heal-capped")]  # the seed is the registered champion
    raised = stored_config(store_uri, "heal-capped").model_copy(update={"max_evaluations": seeded + 1})
    self_healing(config=raised, store_uri=store_uri, run_id="heal-capped")
    assert max({c.round for c in store.read_rows("candidates", "heal-capped")}) == 1  # round 1 only
    events = sorted(store.read_rows("runs", "heal-capped"), key=lambda r: r.event_at)
    assert [e.status for e in events] == ["running", "budget_exhausted", "running", "budget_exhausted"]
    assert events[-1].error.endswith(f"of max_evaluations={seeded + 1}, before round 2")
