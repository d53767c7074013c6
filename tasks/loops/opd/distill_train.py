"""The opd loop's stages: train (or reuse) the teacher, warm-start the student, distill
it chunk by chunk with the configured method, evaluate it, register it. Each stage is
idempotent: it publishes deterministic parts keyed by what it did and returns the stored
result when its part exists, so a resumed run continues from the last published chunk.

The teacher is shared by every run of the store that asks for the same teacher: its
parts live in the partition `teacher.<key>`, key = hash of its training config, steps
and seed, with a registry row `arith/teacher` (select and holdout accuracy, plain
prompts). The student's warm start is shared the same way (`student.<key>`, per seed),
so runs that compare methods at one seed start from identical weights.

Students are candidates whose artifact is a checkpoint blob (weights, AdamW state, step
count and the method's state, e.g. a prefix buffer); evaluation reuses `tasks.training.stages`
(one execution and one `correct` score per case; holdout only for the registered student)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Optional

import torch
from prefect import task

from schemas.configs import RunConfig
from schemas.ids import derived_id
from schemas.post_training import DistillRunConfig
from schemas.rows import CandidateRow, RegistryRow
from suites.arith.lm import from_bytes, to_bytes
from suites.arith.prompts import Prompt, prompt_source
from suites.arith.teacher import STUDENT_MODEL, TEACHER_MODEL, TeacherConfig, train_teacher
from tasks.loops.opd.opd_methods import METHODS
from tasks.loops.opd.opd_rollouts import StepContext
from tasks.runtime.context import RunRef, make_suite, run_config, store_for, tracker_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name
from tasks.training.placement import chunk_key, run_chunk
from tasks.training.policy import device, make_optimizer, pin_cpu_threads
from tasks.training.stages import accuracy, step_row

TEACHER_NAME = "arith/teacher"
SOURCES = {"fixed": "fixed8", "pool": "pool", "teacher_written": "teacher"}
STRIDE_EPISODE_PROB = 0.5
"""Share of multi-turn chain transcripts in a STRIDE student's warm start, so its first
episodes follow the turn format (the other methods' students see plain prompts only)."""


def teacher_config(cfg: DistillRunConfig) -> TeacherConfig:
    """The teacher's supervised mix: the run's categories, hints and `<write>` examples."""
    return TeacherConfig(model=TEACHER_MODEL, categories=cfg.categories, eval_per_category=0, eval_writes=0)


def teacher_partition(cfg: DistillRunConfig) -> str:
    """`teacher.<key>`: the shared partition of the teacher this config asks for."""
    spec = json.dumps([teacher_config(cfg).model_dump(mode="json"), cfg.teacher_steps, cfg.teacher_seed],
                      sort_keys=True)
    return f"teacher.{derived_id(spec)[:16]}"


def candidate_row(run_id: str, store, blob: str, round_index: int, parents: list[str], operator: str,
                  summary: str) -> CandidateRow:
    return CandidateRow(
        run_id=run_id, candidate_id=blob, round=round_index, parent_ids=parents, operator=operator,
        proposer="torch", artifact_kind="weights", artifact_uri=store.blob_uri(blob), island=-1, summary=summary,
    )


def registry_row(run_id: str, name: str, version: int, candidate_id: str, stage: str, alias: Optional[str],
                 select: Optional[float], holdout: Optional[float]) -> RegistryRow:
    return RegistryRow(
        run_id=run_id, name=name, version=version, candidate_id=candidate_id, stage=stage, alias=alias,
        decision_id=derived_id(run_id, candidate_id, "opd", stage), select_score=select, holdout_score=holdout,
        event_at=datetime.now(timezone.utc),
    )


@task(name="train-teacher", **STAGE_OPTIONS)
def train_teacher_once(ref: RunRef) -> str:
    """The frozen teacher's blob id: trained by supervised learning (seeded) unless a run of
    this store already published the same teacher, then registered with its accuracy."""
    store, config = store_for(ref.store_uri), run_config(ref)
    part = teacher_partition(config.opd)
    if store.has_part("registry", part, "teacher", "final"):
        return store.read_part("registry", part, "teacher", "final")[0].candidate_id
    cfg = config.opd
    pin_cpu_threads()
    model, metrics = train_teacher(teacher_config(cfg), cfg.teacher_steps, cfg.teacher_seed)
    blob = store.put_blob(to_bytes(model, {"step": cfg.teacher_steps}))
    suite = make_suite(config, config.suite)
    select, holdout = suite.evaluate(model, "select")["all"], suite.evaluate(model, "holdout")["all"]
    summary = f"teacher: {cfg.teacher_steps} supervised steps, seed {cfg.teacher_seed}, loss {metrics['loss_last']:.3f}"
    store.write_part("candidates", part, "teacher", "final", [candidate_row(part, store, blob, 0, [], "sft", summary)])
    store.write_part("registry", part, "teacher", "final",
                     [registry_row(part, TEACHER_NAME, 1, blob, "stable", None, select, holdout)])
    return blob


def student_config(cfg: DistillRunConfig) -> TeacherConfig:
    """The student's warm start: plain prompts of the run's categories, no hints (STRIDE's
    student also multi-turn chain transcripts, the format its episodes take)."""
    episode_prob = STRIDE_EPISODE_PROB if cfg.method == "stride" else 0.0
    return TeacherConfig(model=STUDENT_MODEL, categories=cfg.categories, context_prob=0.0, write_prob=0.0,
                         episode_prob=episode_prob, eval_per_category=0, eval_writes=0)


def warm_start_partition(cfg: DistillRunConfig, seed: int) -> str:
    """`student.<key>`: the shared partition of the warm start of this config and seed."""
    spec = json.dumps([student_config(cfg).model_dump(mode="json"), cfg.pretrain_steps, seed], sort_keys=True)
    return f"student.{derived_id(spec)[:16]}"


def warm_start(store, cfg: DistillRunConfig, seed: int) -> str:
    """The warm-started student's blob: trained unless a run of this store (any method,
    same categories, steps and seed) already published it; runs that compare methods
    then start from the very same weights."""
    part = warm_start_partition(cfg, seed)
    if store.has_part("candidates", part, "init", "policy"):
        return store.read_part("candidates", part, "init", "policy")[0].candidate_id
    pin_cpu_threads()
    model, _ = train_teacher(student_config(cfg), cfg.pretrain_steps, seed)
    blob = store.put_blob(student_bytes(model, None, 0, {}))
    summary = f"supervised warm start, {cfg.pretrain_steps} steps, seed {seed}"
    store.write_part("candidates", part, "init", "policy", [candidate_row(part, store, blob, 0, [], "sft", summary)])
    return blob


@task(name="init-student", **STAGE_OPTIONS)
def init_student(ref: RunRef) -> str:
    """The run's first candidate: the shared warm start of its seed (registry stage
    experimental) (idempotent)."""
    store = store_for(ref.store_uri)
    if store.has_part("candidates", ref.run_id, "init", "policy"):
        return store.read_part("candidates", ref.run_id, "init", "policy")[0].candidate_id
    config = run_config(ref)
    blob = warm_start(store, config.opd, config.seed)
    store.write_part("registry", ref.run_id, "register", "init",
                     [registry_row(ref.run_id, registry_name(config), 1, blob, "experimental", None, None, None)])
    summary = f"supervised warm start, {config.opd.pretrain_steps} steps"
    store.write_part("candidates", ref.run_id, "init", "policy",
                     [candidate_row(ref.run_id, store, blob, 0, [], "sft", summary)])
    return blob


def _cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    return value


def student_bytes(model, optimizer, step: int, method_state: dict) -> bytes:
    """A student checkpoint: `suites.arith.lm.to_bytes` with the AdamW state, the step
    count and the method's state in its meta (read by `tasks.training.policy.load_checkpoint` too)."""
    opt = None if optimizer is None else _cpu(optimizer.state_dict())
    return to_bytes(model.cpu(), {"step": step, "optimizer": opt, "method_state": method_state})


def load_student(data: bytes, lr: float):
    """Inverse of `student_bytes` -> (model on `device()`, its AdamW, steps done, method state)."""
    model, meta = from_bytes(data)
    model.to(device())
    optimizer = make_optimizer(model, lr)
    if meta.get("optimizer") is not None:
        optimizer.load_state_dict(meta["optimizer"])
    return model, optimizer, int(meta.get("step", 0)), dict(meta.get("method_state") or {})


def prompt_pool(config: RunConfig, teacher) -> list[Prompt]:
    """The run's DF-OPD prompt source over the train split (deterministic in the seed).
    Teacher-written prompts are kept unfiltered, as in DF-OPD (keep="all"): an unparsed
    one is still distilled on, it only has no answer to grade or context to compile."""
    train = make_suite(config, config.suite).problems("train")
    cfg = config.opd
    return prompt_source(SOURCES[cfg.prompt_source], train, config.seed, cfg.fixed_pool_size, teacher, keep="all")


def load_teacher(ref: RunRef, teacher_id: str):
    teacher, _ = from_bytes(store_for(ref.store_uri).get_blob(teacher_id))
    return teacher.to(device()).eval().requires_grad_(False)


@task(name="distill-chunk", **STAGE_OPTIONS)
def distill_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str, teacher_id: str) -> str:
    """`n_steps` steps of the configured method from the student `parent_id` against the
    frozen teacher, on the run's GPU worker when it has a cluster
    (`tasks.training.placement.run_chunk`); returns the new student's id."""
    return run_chunk(ref, "distill", chunk, first_step, n_steps, opd_chunk, parent_id, teacher_id)


def opd_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str,
              teacher_id: str) -> tuple[str, str | None]:
    """`distill_chunk`'s work: publishes the checkpoint as a candidate and one train_steps
    row per step -> (its id, progress status) (idempotent: a published chunk is read
    back, not retrained, and has no status)."""
    store, key = store_for(ref.store_uri), chunk_key(chunk)
    if store.has_part("train_steps", ref.run_id, "distill", key):
        return store.read_part("candidates", ref.run_id, "distill", key)[0].candidate_id, None
    config = run_config(ref)
    cfg = config.opd
    student, optimizer, done, state = load_student(store.get_blob(parent_id), cfg.lr)
    if done != first_step:
        raise RuntimeError(f"student {parent_id[:12]} has {done} steps but chunk {chunk} starts at step {first_step}")
    teacher = load_teacher(ref, teacher_id)
    ctx = StepContext(student, teacher, optimizer, prompt_pool(config, teacher), cfg, config.seed,
                      make_suite(config, config.suite), state)
    results = [METHODS[cfg.method](ctx, s) for s in range(first_step, first_step + n_steps)]
    crash_point("distill", chunk)
    blob = store.put_blob(student_bytes(student, optimizer, first_step + n_steps, ctx.state))
    summary = f"{cfg.method} steps {first_step}..{first_step + n_steps - 1}, teacher {teacher_id[:12]}"
    store.write_part("candidates", ref.run_id, "distill", key,
                     [candidate_row(ref.run_id, store, blob, chunk + 1, [parent_id], cfg.method, summary)])
    store.write_part("train_steps", ref.run_id, "distill", key,
                     [step_row(ref, blob, first_step + i, r) for i, r in enumerate(results)])
    return blob, f"step {first_step + n_steps}, rollout accuracy {results[-1].metrics['accuracy']:.2f}"


@task(name="evaluate-student", **STAGE_OPTIONS)
def evaluate_student(ref: RunRef, candidate_id: str) -> float:
    """Select-split greedy accuracy of a student, for tracking the run (never holdout)."""
    return accuracy(ref, candidate_id, "select")


@task(name="register-student", **STAGE_OPTIONS)
def register_student(ref: RunRef, candidate_id: str, teacher_id: str) -> float:
    """Register the final student (stage stable, alias champion) with its select score and
    its holdout score, measured here only; returns the holdout score (idempotent)."""
    store, config = store_for(ref.store_uri), run_config(ref)
    if not store.has_part("registry", ref.run_id, "register", "final"):
        select, holdout = accuracy(ref, candidate_id, "select"), accuracy(ref, candidate_id, "holdout")
        row = registry_row(ref.run_id, registry_name(config), 2, candidate_id, "stable", CHAMPION, select, holdout)
        store.write_part("registry", ref.run_id, "register", "final", [row])
        tracker_for(ref).log_candidate(
            ref.run_id, candidate_id,
            params={"loop": config.loop, "method": config.opd.method, "teacher": teacher_id[:12],
                    "teacher_context": config.opd.teacher_context, "prompt_source": config.opd.prompt_source},
            metrics={"select_correct": select, "holdout_correct": holdout}, tags={"alias": CHAMPION},
            artifact=store.get_blob(candidate_id), artifact_name="student.pt",
        )
    return store.read_part("registry", ref.run_id, "register", "final")[0].holdout_score
