"""The evolve loop end to end on the real engine, store, sandbox and scorers."""

import pytest

from flows.evolve import evolve, round_plan
from schemas.configs import EvolveConfig, RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]


def small_config(**overrides) -> RunConfig:
    base = dict(loop="evolve", suite="circle_packing", budget=6, seed=3, workers=2, tracking=False,
                evolve=EvolveConfig(children_per_round=3, islands=2))
    return RunConfig(**{**base, **overrides})


def test_round_plan_counts_seed_then_children():
    assert round_plan(6, 3) == [1, 3, 3]
    assert round_plan(7, 3) == [1, 3, 3, 1]
    assert round_plan(2, 8) == [1, 2]


def test_evolve_records_every_stage_and_is_reproducible(prefect_server, tmp_path):
    first = evolve(config=small_config(), store_uri=str(tmp_path / "a"), run_id="run-a")
    second = evolve(config=small_config(), store_uri=str(tmp_path / "b"), run_id="run-b")
    a, b = open_store(str(tmp_path / "a")), open_store(str(tmp_path / "b"))
    cands_a = sorted((r.round, r.candidate_id, r.operator) for r in a.read_rows("candidates"))
    cands_b = sorted((r.round, r.candidate_id, r.operator) for r in b.read_rows("candidates"))
    assert cands_a == cands_b
    assert 5 <= len(cands_a) <= 7
    decisions_a = sorted((r.candidate_id, r.decision) for r in a.read_rows("gate_decisions"))
    assert decisions_a == sorted((r.candidate_id, r.decision) for r in b.read_rows("gate_decisions"))
    assert len(decisions_a) == len(cands_a)
    executions = a.read_rows("executions")
    pairs = [(e.candidate_id, e.case_id) for e in executions]
    assert len(pairs) == len(set(pairs))
    train_select = [e for e in executions if e.split in ("train", "select")]
    assert len(train_select) == 2 * len(cands_a)
    holdout = {e.candidate_id for e in executions if e.split == "holdout"}
    registered = {r.candidate_id for r in a.read_rows("registry")}
    assert holdout == registered and len(registered) >= 1
    assert first["candidate_id"] == second["candidate_id"]
    assert first["holdout_score"] is not None and first["holdout_score"] > 0
    versions = {s.scorer_version for s in a.read_rows("scores")}
    assert len(versions) == 1
    statuses = [r.status for r in a.read_rows("runs")]
    assert sorted(statuses) == ["finished", "running"]


def test_every_table_answers_sql_after_a_run(prefect_server, tmp_path):
    evolve(config=small_config(budget=3), store_uri=str(tmp_path), run_id="run-sql")
    store = open_store(str(tmp_path))
    counts = sql(store, "SELECT (SELECT count(*) FROM candidates) AS c, (SELECT count(*) FROM scores) AS s, "
                        "(SELECT count(*) FROM gate_decisions) AS g, (SELECT count(*) FROM registry) AS r, "
                        "(SELECT count(*) FROM distillates) AS d, (SELECT count(*) FROM cases) AS k, "
                        "(SELECT count(*) FROM steps) AS st, (SELECT count(*) FROM train_steps) AS t").to_pylist()[0]
    assert counts["c"] >= 3 and counts["g"] == counts["c"] and counts["r"] >= 1 and counts["k"] == 3
    assert counts["st"] == 0 and counts["t"] == 0
    best = sql(store, "SELECT max(select_score) AS best FROM registry").to_pylist()[0]["best"]
    assert 0 < best < 2.6359830849


def test_bin_packing_run_gates_against_first_champion(prefect_server, tmp_path):
    config = small_config(suite="bin_packing", budget=3, suite_params={"datasets": ["or1"]})
    summary = evolve(config=config, store_uri=str(tmp_path), run_id="run-bins")
    store = open_store(str(tmp_path))
    seed_decision = [d for d in store.read_rows("gate_decisions") if d.round == 0][0]
    assert seed_decision.decision == "accept" and seed_decision.baseline_id is None
    later = [d for d in store.read_rows("gate_decisions") if d.round > 0]
    assert all(d.baseline_id is not None and d.n_cases == 5 for d in later)
    assert -100 < summary["holdout_score"] < 0


def test_failed_register_rolls_back_the_gate_and_resume_completes(prefect_server, tmp_path, monkeypatch):
    import tasks.stages.register as register_module

    config = small_config(budget=3)
    reference = evolve(config=config, store_uri=str(tmp_path / "ref"), run_id="ref")

    def broken(*args, **kwargs):
        raise RuntimeError("registry unavailable")

    monkeypatch.setattr(register_module, "registry_rows", broken)
    with pytest.raises(Exception, match="registry unavailable"):
        evolve(config=config, store_uri=str(tmp_path / "run"), run_id="run")
    store = open_store(str(tmp_path / "run"))
    assert not store.has_part("gate_decisions", "run", "gate", "r0000")
    assert store.read_rows("registry", "run") == []
    assert [r.status for r in store.read_rows("runs", "run") if r.status == "failed"] == ["failed"]

    monkeypatch.undo()
    resumed = evolve(config=config, store_uri=str(tmp_path / "run"), run_id="run")
    assert resumed["candidate_id"] == reference["candidate_id"]
    ref_store = open_store(str(tmp_path / "ref"))
    assert sorted((d.candidate_id, d.decision) for d in store.read_rows("gate_decisions")) == \
        sorted((d.candidate_id, d.decision) for d in ref_store.read_rows("gate_decisions"))


def test_no_table_holds_a_key_twice_after_a_run(prefect_server, tmp_path):
    from schemas.tables import TABLES

    evolve(config=small_config(budget=4), store_uri=str(tmp_path), run_id="keys")
    store = open_store(str(tmp_path))
    for name, spec in TABLES.items():
        keys = [tuple(getattr(r, c) for c in spec.key) for r in store.read_rows(name)]
        assert len(keys) == len(set(keys)), name
