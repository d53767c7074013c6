"""opd: on-policy distillation of a tiny LM student from a frozen, larger teacher on the
arith suite, one method per run (OPD; DIAL-OPD; Cal-OPD; Attract/Repel and its
attract-only ablation; GVPO++'s OPD form; STRIDE's multi-turn episodes; CLOOPD's
multi-pass frozen batches), with the Self-Teacher Context level the teacher reads,
DF-OPD's prompt source and Two-End's middle-step loss mask as options.

    teacher <- supervised teacher, trained once per config and seed  (registry: arith/teacher)
    student <- supervised warm start of the smaller student          (registry: experimental)
    track its select accuracy
    for chunk c of `eval_every` steps until `budget` steps:
        each step: G prompts from the prompt source x n student rollouts; the teacher
                   scores the student's sampled tokens under its context (and the
                   method's probes or contrast contexts); the method's loss on the
                   tokens it keeps; AdamW step
        checkpoint the student (weights + optimizer + method state); track select accuracy
    register the final student with its holdout accuracy             (registry: stable, champion)

No gate: as in the papers, every step is kept; selection and holdout are separate splits.
Every stage publishes deterministic parts, so a resumed run continues from the last
published chunk and reproduces the uninterrupted run on CPU."""

from __future__ import annotations

from prefect import flow

from schemas.loops import OPDRun
from tasks.loops.opd.distill_train import (
    distill_chunk,
    evaluate_student,
    init_student,
    register_student,
    train_teacher_once,
)
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run
from tasks.training.chunks import chunk_plan
from tasks.training.stages import policy_summary


def progress_total(config: OPDRun) -> int:
    """Optimizer steps a run makes, for progress bars."""
    return config.budget


@flow(name="opd", flow_run_name=flow_run_name)
def opd(config: OPDRun, store_uri: str | None = None, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        teacher = train_teacher_once(ref)
        student = init_student(ref)
        evaluate_student(ref, student)
        for chunk, (first_step, n_steps) in enumerate(chunk_plan(config.budget, config.opd.eval_every)):
            student = distill_chunk(ref, chunk, first_step, n_steps, student, teacher)
            evaluate_student(ref, student)
        register_student(ref, student, teacher)
    return policy_summary(ref)
