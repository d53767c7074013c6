"""The self_healing loop end to end on the real engine, store, sandbox and toolsim."""

import json

import pytest

from flows.self_healing import self_healing
from schemas.configs import RunConfig
from storage.store import open_store

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
    healed = [c for c in candidates if c.round > 0]
    assert len(healed) == 4 and all(c.proposer == "rules" for c in healed)
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
