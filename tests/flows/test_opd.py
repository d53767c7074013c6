"""The opd loop end to end on the real engine and store, at a tiny budget: a teacher
trained once and reused by a second run of the store, a warm-started student, four
DIAL-OPD steps in two chunks, evaluation, registration with select and holdout scores,
SQL over the tables, an idempotent rerun, and a crashed run that resumes to exactly the
uninterrupted one (CPU determinism)."""

import math

import pytest
import torch

from flows.opd import chunk_plan, opd, progress_total
from schemas.configs import RunConfig
from schemas.post_training import DistillRunConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.loops.opd.distill_train import TEACHER_NAME, teacher_partition
from tasks.loops.opd.opd_methods import METHODS

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TABLES = ("candidates", "executions", "scores", "registry", "train_steps")


def small_config(**overrides) -> RunConfig:
    cfg = DistillRunConfig(method="dial", teacher_steps=10, pretrain_steps=10, prompts_per_step=2, rollouts=2,
                           max_new_tokens=16, eval_every=2, **overrides)
    return RunConfig(loop="opd", suite="arith", budget=4, seed=5, tracking=False, opd=cfg,
                     suite_params={"n_per_category": 100})


def counts(store) -> dict[str, int]:
    return {t: len(store.read_rows(t)) for t in TABLES}


def test_chunk_plan_and_progress():
    assert chunk_plan(4, 2) == [(0, 2), (2, 2)]
    assert chunk_plan(5, 2) == [(0, 2), (2, 2), (4, 1)]
    assert progress_total(small_config()) == 4


def test_opd_distills_registers_reruns_and_resumes(prefect_server, tmp_path, monkeypatch):
    torch.set_num_threads(1)
    uri = str(tmp_path / "a")
    summary = opd(config=small_config(), store_uri=uri, run_id="opd-a")
    store = open_store(uri)
    steps = sorted(store.read_rows("train_steps", "opd-a"), key=lambda r: r.step)
    assert [s.step for s in steps] == [0, 1, 2, 3] and all(math.isfinite(s.loss) and s.samples == 4 for s in steps)
    assert all(0 < s.metrics["selected_frac"] <= 1 and s.metrics["teacher_tokens"] > 0 for s in steps)

    teacher = store.read_rows("registry", teacher_partition(small_config().opd))
    assert [(t.name, t.stage) for t in teacher] == [(TEACHER_NAME, "stable")]
    assert 0 <= teacher[0].select_score <= 1 and 0 <= teacher[0].holdout_score <= 1
    registry = {r.stage: r for r in store.read_rows("registry", "opd-a")}
    final = registry["stable"]
    assert final.name == "arith/opd" and final.alias == "champion" and summary["candidate_id"] == final.candidate_id
    assert final.select_score is not None and final.holdout_score is not None
    assert registry["experimental"].select_score is None and registry["experimental"].holdout_score is None
    holdout = {e.candidate_id for e in store.read_rows("executions", "opd-a") if e.split == "holdout"}
    assert holdout == {final.candidate_id}  # holdout only for the registered student

    # analysts' view: the champion's scores and its chunk's per-step metrics in SQL
    query = ("SELECT t.step, t.metrics['selected_frac'] AS selected, r.holdout_score FROM train_steps t "
             "JOIN registry r ON r.run_id = t.run_id AND r.candidate_id = t.candidate_id "
             "WHERE t.run_id = 'opd-a' AND r.stage = 'stable' ORDER BY t.step")
    rows = sql(store, query).to_pylist()
    assert [r["step"] for r in rows] == [2, 3] and rows[0]["holdout_score"] == final.holdout_score

    before = counts(store)
    again = opd(config=small_config(), store_uri=uri, run_id="opd-a")
    assert counts(store) == before and again["candidate_id"] == summary["candidate_id"]

    other_seed = small_config().model_copy(update={"seed": 6})
    opd(config=other_seed, store_uri=uri, run_id="opd-c")  # same teacher: reused, not retrained
    assert len(store.read_rows("registry", teacher_partition(small_config().opd))) == 1

    real, failed = METHODS["dial"], []

    def crash_once(ctx, step):
        if step == 3 and not failed:
            failed.append(step)
            raise RuntimeError("simulated crash in chunk 1")
        return real(ctx, step)

    monkeypatch.setitem(METHODS, "dial", crash_once)
    with pytest.raises(RuntimeError, match="simulated crash"):
        opd(config=small_config(), store_uri=str(tmp_path / "b"), run_id="opd-b")
    resumed = opd(config=small_config(), store_uri=str(tmp_path / "b"), run_id="opd-b")
    other = open_store(str(tmp_path / "b"))
    assert [s.loss for s in sorted(other.read_rows("train_steps"), key=lambda r: r.step)] == [s.loss for s in steps]
    assert resumed["candidate_id"] == summary["candidate_id"]
    assert resumed["holdout_score"] == summary["holdout_score"]
