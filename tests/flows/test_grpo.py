"""The grpo loop end to end on the real engine and store: a tiny warm-started student,
six GRPO steps in two chunks, evaluation rollouts, registration, idempotent rerun, and
an interrupted run that resumes to exactly the uninterrupted one (CPU determinism)."""

import math

import pytest
import torch

from flows.grpo import grpo, progress_total
from schemas.configs import RunConfig
from schemas.post_training import GRPOConfig
from storage.store import open_store
from suites.arith import Arith
from suites.arith.lm import from_bytes
from tasks.training.chunks import chunk_plan
from tasks.training.policy import greedy_outputs

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TABLES = ("candidates", "cases", "executions", "scores", "registry", "train_steps")


def small_config(**overrides) -> RunConfig:
    grpo_config = GRPOConfig(categories=("add",), pretrain_steps=300, prompts_per_step=4, group_size=4,
                             eval_every=3, lr=1e-4)
    return RunConfig(**{**dict(loop="grpo", suite="arith", budget=6, seed=5, tracking=False, grpo=grpo_config), **overrides})


def test_chunk_plan_and_progress():
    assert chunk_plan(6, 3) == [(0, 3), (3, 3)]
    assert chunk_plan(7, 3) == [(0, 3), (3, 3), (6, 1)]
    assert chunk_plan(2, 10) == [(0, 2)]
    assert progress_total(small_config()) == 6


def counts(store) -> dict[str, int]:
    return {t: len(store.read_rows(t)) for t in TABLES}


def eval_outputs(store, candidate_id: str, split: str) -> dict[str, str]:
    rows = [e for e in store.read_rows("executions") if e.candidate_id == candidate_id and e.split == split]
    return {e.case_id: store.get_blob(e.output_uri.rsplit("/", 1)[-1]).decode() for e in rows}


def test_grpo_trains_registers_reruns_and_resumes(prefect_server, tmp_path, monkeypatch):
    torch.set_num_threads(1)
    summary = grpo(config=small_config(), store_uri=str(tmp_path / "a"), run_id="grpo-a")
    store = open_store(str(tmp_path / "a"))
    steps = sorted(store.read_rows("train_steps"), key=lambda r: r.step)
    assert [s.step for s in steps] == list(range(6))
    assert all(math.isfinite(s.loss) and s.samples == 16 and s.tokens > 0 and s.wall_s > 0 for s in steps)
    assert all({"reward_mean", "accuracy", "entropy", "kept_groups", "clip_frac"} <= set(s.metrics) for s in steps)
    assert any(s.metrics["kept_groups"] > 0 for s in steps)  # the warm start earns some reward

    registry = {r.stage: r for r in store.read_rows("registry")}
    final, init = registry["stable"], registry["experimental"]
    assert final.alias == "champion" and 0.0 <= final.holdout_score <= 1.0 and final.version == 2
    assert summary["candidate_id"] == final.candidate_id and summary["train_steps"] == 6
    chunks = {c.round: c for c in store.read_rows("candidates")}
    assert sorted(chunks) == [0, 1, 2] and chunks[0].candidate_id == init.candidate_id
    assert chunks[2].candidate_id == final.candidate_id and chunks[2].parent_ids == [chunks[1].candidate_id]
    assert {s.candidate_id for s in steps} == {chunks[1].candidate_id, chunks[2].candidate_id}
    holdout = {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"}
    assert holdout == {final.candidate_id}

    suite = Arith(categories=("add",))
    select = suite.cases("select")
    model, meta = from_bytes(store.get_blob(final.candidate_id))
    assert meta["step"] == 6 and meta["optimizer"] is not None
    recorded = eval_outputs(store, final.candidate_id, "select")
    assert dict(zip([c.case_id for c in select], greedy_outputs(model, suite, select))) == recorded
    scores = [s for s in store.read_rows("scores") if s.candidate_id == final.candidate_id and s.split == "select"]
    assert {s.metric for s in scores} == {"correct"} and len(scores) == len(select)
    assert abs(sum(s.value for s in scores) / len(scores) - final.select_score) < 1e-12

    before = counts(store)
    again = grpo(config=small_config(), store_uri=str(tmp_path / "a"), run_id="grpo-a")
    assert counts(store) == before and again["candidate_id"] == summary["candidate_id"]

    import tasks.training.stages as train_module

    real_step, failed = train_module.train_step, []

    def crash_once(model, optimizer, suite, train, cfg, seed, step):
        if step == 3 and not failed:
            failed.append(step)
            raise RuntimeError("simulated crash in chunk 1")
        return real_step(model, optimizer, suite, train, cfg, seed, step)

    monkeypatch.setattr(train_module, "train_step", crash_once)
    with pytest.raises(RuntimeError, match="simulated crash"):
        grpo(config=small_config(), store_uri=str(tmp_path / "b"), run_id="grpo-b")
    resumed = grpo(config=small_config(), store_uri=str(tmp_path / "b"), run_id="grpo-b")
    other = open_store(str(tmp_path / "b"))
    assert [s.loss for s in sorted(other.read_rows("train_steps"), key=lambda r: r.step)] == [s.loss for s in steps]
    assert resumed["candidate_id"] == summary["candidate_id"]
    assert resumed["holdout_score"] == summary["holdout_score"]
    print(f"\nselect accuracy: warm start {summary['init_select_score']:.3f} -> after GRPO {summary['select_score']:.3f}; "
          f"holdout {summary['holdout_score']:.3f}; {summary['wall_s_per_step']:.3f} s/step")
