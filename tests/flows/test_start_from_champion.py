"""The ratchet turns across runs: three consecutive runs on one store, each started
from the store's champion of its registry name, never lose ground and each continues
exactly where the last one ended."""

import json

import pytest

from flows.evolve import evolve
from flows.self_healing import self_healing
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store
from tasks.runtime.start import registry_name

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def evolve_config(seed: int) -> RunConfig:
    return RunConfig(loop="evolve", suite="circle_packing", budget=4, seed=seed, workers=2, tracking=False,
                     start_from="champion", evolve=EvolveConfig(children_per_round=2, islands=2))


def heal_config(night: int) -> RunConfig:
    """Every night the same seed, as the nightly deployment runs: toolsim draws its
    noise from the run seed, so only same-seed runs score a harness on the same payloads."""
    return RunConfig(loop="self_healing", suite="toolsim", budget=2, seed=0, workers=2, tracking=False,
                     start_from="champion", suite_params={"instances_per_template": 10})


def last_champion(store, run_id: str):
    held = [r for r in store.read_rows("registry", run_id) if r.alias == "champion"]
    return max(held, key=lambda r: (r.event_at, r.version))


def round0(store, run_id: str):
    return [c for c in store.read_rows("candidates", run_id) if c.round == 0]


def three_runs(flow, config_of, root, prefix: str):
    run_ids = [f"{prefix}-{night}" for night in range(3)]
    for night, run_id in enumerate(run_ids):  # a new seed per night: each run explores further
        flow(config=config_of(night), store_uri=str(root), run_id=run_id)
    return open_store(str(root)), run_ids


def check_ratchet(store, run_ids, name: str) -> None:
    champions = [last_champion(store, run_id) for run_id in run_ids]
    assert all(c.name == name for c in champions)
    scores = [c.select_score for c in champions]
    assert scores == sorted(scores), f"a run's champion lost ground: {scores}"
    first = round0(store, run_ids[0])
    assert [c.operator for c in first] == ["seed"]
    for earlier, later, run_id in zip(champions, champions[1:], run_ids[1:]):
        start = round0(store, run_id)
        assert [c.candidate_id for c in start] == [earlier.candidate_id]  # round 0 is last night's champion
        rows = store.read_rows("runs", run_id)
        assert {(r.start_candidate_id, r.start_run_id) for r in rows} == {(earlier.candidate_id, earlier.run_id)}
        assert "re-scored under the same scorer" in start[0].summary
        rescored = min((r for r in store.read_rows("registry", run_id)), key=lambda r: r.version)
        assert rescored.candidate_id == earlier.candidate_id
        assert rescored.select_score == pytest.approx(earlier.select_score, abs=1e-12)  # same cases, same scorer
        registered = json.loads(rows[0].config_json)["start"]
        assert registered["decision_id"] == earlier.decision_id
    assert {(r.start_candidate_id, r.start_run_id) for r in store.read_rows("runs", run_ids[0])} == {(None, None)}


def test_evolve_continues_from_the_last_champion(prefect_server, tmp_path):
    store, run_ids = three_runs(evolve, evolve_config, tmp_path / "store", "nightly")
    check_ratchet(store, run_ids, registry_name(evolve_config(0)))
    for run_id in run_ids[1:]:  # round 0's decision names the champion it re-scored
        decision = [d for d in store.read_rows("gate_decisions", run_id) if d.round == 0]
        assert len(decision) == 1 and decision[0].decision == "accept"
        assert decision[0].reason.startswith("the champion ")
        start = round0(store, run_id)[0]
        earlier = last_champion(store, store.read_rows("runs", run_id)[0].start_run_id)
        assert decision[0].select_score == pytest.approx(earlier.select_score, abs=1e-12)  # same scorer, same cases
        assert start.candidate_id == earlier.candidate_id


def test_self_healing_continues_from_the_last_champion(prefect_server, tmp_path):
    store, run_ids = three_runs(self_healing, heal_config, tmp_path / "store", "heal-nightly")
    check_ratchet(store, run_ids, registry_name(heal_config(0)))


def test_a_run_that_starts_from_the_seed_ignores_the_store_champion(prefect_server, tmp_path):
    root = tmp_path / "store"
    evolve(config=evolve_config(0), store_uri=str(root), run_id="first")
    seeded = evolve_config(1).model_copy(update={"start_from": "seed"})
    evolve(config=seeded, store_uri=str(root), run_id="fresh")
    store = open_store(str(root))
    assert round0(store, "fresh")[0].candidate_id == round0(store, "first")[0].candidate_id  # the suite's seed
    assert round0(store, "fresh")[0].summary == "the suite's seed program"


def test_start_from_champion_is_refused_where_round_0_is_not_a_program():
    with pytest.raises(ValueError, match="start_from='champion' continues a program or harness search; grpo"):
        RunConfig(loop="grpo", suite="arith", budget=2, start_from="champion")
