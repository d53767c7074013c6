"""The ppo_pact loop end to end on the real engine and store: a briefly warm-started actor
and its critic, four actor-critic steps in two chunks, evaluation rollouts, registration,
idempotent rerun, an interrupted run that resumes to exactly the uninterrupted one (CPU
determinism). The PPO critic runs end to end in the findings smoke test."""

import math

import pytest
import torch

from flows import LOOPS, PROGRESS
from flows.ppo_pact import ppo_pact
from schemas.configs import RunConfig
from schemas.loops import LOOP_SPECS
from schemas.post_training import PPOPACTConfig
from storage.store import open_store
from tasks.loops.ppo_pact.actor_critic import load_critic
from tasks.loops.ppo_pact.critic_train import CRITIC

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TABLES = ("candidates", "cases", "executions", "scores", "registry", "train_steps")


def small_config(critic: str = "pact") -> RunConfig:
    cfg = PPOPACTConfig(critic=critic, categories=("add",), pretrain_steps=60, prompts_per_step=2, group_size=4,
                        max_new_tokens=12, eval_every=2, critic_warmup_steps=1)
    return RunConfig(loop="ppo_pact", suite="arith", budget=4, seed=5, tracking=False, ppo_pact=cfg,
                     suite_params={"n_per_category": 60})


def counts(store) -> dict[str, int]:
    return {t: len(store.read_rows(t)) for t in TABLES}


def test_ppo_pact_trains_registers_reruns_and_resumes(prefect_server, tmp_path, monkeypatch):
    torch.set_num_threads(1)
    assert LOOPS["ppo_pact"] is ppo_pact and PROGRESS["ppo_pact"](small_config()) == 4
    assert LOOP_SPECS["ppo_pact"].default_suite == "arith"
    summary = ppo_pact(config=small_config(), store_uri=str(tmp_path / "a"), run_id="pact-a")
    store = open_store(str(tmp_path / "a"))
    steps = sorted(store.read_rows("train_steps"), key=lambda r: r.step)
    assert [s.step for s in steps] == list(range(4)) and all(s.samples == 8 for s in steps)
    assert [s.metrics["actor_updated"] for s in steps] == [0.0, 1.0, 1.0, 1.0]
    assert all(math.isfinite(s.metrics[k]) for s in steps
               for k in ("actor_loss", "critic_loss", "entropy", "critic_mc_error", "critic_masked_frac"))

    candidates = store.read_rows("candidates")
    actors = {c.round: c for c in candidates if c.operator != CRITIC}
    critics = {c.round: c for c in candidates if c.operator == CRITIC}
    assert sorted(actors) == sorted(critics) == [0, 1, 2]
    assert actors[2].parent_ids == [actors[1].candidate_id, critics[1].candidate_id]
    assert {s.candidate_id for s in steps} == {actors[1].candidate_id, actors[2].candidate_id}
    critic, _, critic_steps = load_critic(store.get_blob(critics[2].candidate_id), 1e-3, torch.device("cpu"))
    assert critic_steps == 4

    registry = {r.stage: r for r in store.read_rows("registry")}
    final = registry["stable"]
    assert final.candidate_id == actors[2].candidate_id == summary["candidate_id"]
    assert registry["experimental"].candidate_id == actors[0].candidate_id
    assert final.alias == "champion" and 0.0 <= final.holdout_score <= 1.0 and final.select_score is not None
    holdout = {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"}
    assert holdout == {final.candidate_id}
    selected = {e.candidate_id for e in store.read_rows("executions") if e.split == "select"}
    assert selected == {a.candidate_id for a in actors.values()}  # the actor is evaluated after every chunk

    before = counts(store)
    again = ppo_pact(config=small_config(), store_uri=str(tmp_path / "a"), run_id="pact-a")
    assert counts(store) == before and again["candidate_id"] == summary["candidate_id"]

    import tasks.loops.ppo_pact.critic_train as stage_module

    real_step, failed = stage_module.actor_critic_step, []

    def crash_once(learner, suite, train, cfg, seed, step):
        if step == 2 and not failed:
            failed.append(step)
            raise RuntimeError("simulated crash in chunk 1")
        return real_step(learner, suite, train, cfg, seed, step)

    monkeypatch.setattr(stage_module, "actor_critic_step", crash_once)
    with pytest.raises(RuntimeError, match="simulated crash"):
        ppo_pact(config=small_config(), store_uri=str(tmp_path / "b"), run_id="pact-b")
    resumed = ppo_pact(config=small_config(), store_uri=str(tmp_path / "b"), run_id="pact-b")
    other = open_store(str(tmp_path / "b"))
    assert [s.loss for s in sorted(other.read_rows("train_steps"), key=lambda r: r.step)] == [s.loss for s in steps]
    assert resumed["candidate_id"] == summary["candidate_id"]


def test_wrong_suite_is_refused():
    with pytest.raises(ValueError, match="ppo_pact does not run on suite 'toolsim'; it runs on: arith"):
        RunConfig.model_validate({**small_config().model_dump(), "suite": "toolsim"})
