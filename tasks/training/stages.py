"""The grpo loop's stages: warm-start the policy, train it chunk by chunk, evaluate it,
register it. Each stage is idempotent: it publishes deterministic parts keyed by what
it did (init, chunk c, split + candidate) and returns the stored result when its last
part exists, so a resumed run continues from the last published chunk.

A policy is a candidate whose artifact is a checkpoint blob (`tasks.training.policy.save_checkpoint`:
weights, optimizer state and step count; `suites.arith.lm.from_bytes` reads it). Evaluation
rollouts are executions (one per case, the output text as a blob) scored by the suite's
exact match; holdout cases are only run for the registered final policy. The
evaluation and registration stages also serve `ppo_pact` (`tasks.loops.ppo_pact.critic_train`)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean
from typing import Sequence

from prefect import task

from schemas.ids import derived_id
from schemas.rows import CandidateRow, ExecutionRow, RegistryRow, ScoreRow, TrainStepRow
from tasks.runtime.context import RunRef, anchored_scorer_version, make_suite, run_config, store_for, tracker_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name
from tasks.training.placement import chunk_key, run_chunk, worker_name
from tasks.training.policy import (
    device,
    greedy_outputs,
    load_checkpoint,
    load_policy,
    pretrain,
    save_checkpoint,
    train_step,
)

def arith(ref: RunRef):
    config = run_config(ref)
    return make_suite(config, config.suite)




def policy_row(ref: RunRef, blob: str, round_index: int, parents: list[str], operator: str, summary: str) -> CandidateRow:
    return CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=parents, operator=operator,
        proposer=run_config(ref).loop, artifact_kind="weights", artifact_uri=store_for(ref.store_uri).blob_uri(blob),
        island=-1, summary=summary,
    )


def registry_row(ref: RunRef, version: int, candidate_id: str, stage: str, alias: str | None,
                 select: float | None, holdout: float | None) -> RegistryRow:
    config = run_config(ref)
    return RegistryRow(
        run_id=ref.run_id, name=registry_name(config), version=version, candidate_id=candidate_id, stage=stage,
        alias=alias, decision_id=derived_id(ref.run_id, candidate_id, config.loop, stage), select_score=select,
        holdout_score=holdout, event_at=datetime.now(timezone.utc),
    )


def warm_start(ref: RunRef, categories: Sequence[str], steps: int) -> str:
    """The supervised warm start's blob for the run's seed: trained unless a run of this
    store (either post-training loop, any variant) already published it in the shared
    partition `warm.<key>` (key: categories, steps, seed), so the variants that a findings
    script compares start from the very same weights and the warm start is paid once."""
    store, seed = store_for(ref.store_uri), run_config(ref).seed
    part = f"warm.{derived_id(json.dumps([list(categories), steps, seed]))[:16]}"
    if store.has_part("candidates", part, "init", "policy"):
        return store.read_part("candidates", part, "init", "policy")[0].candidate_id
    blob = store.put_blob(save_checkpoint(pretrain(categories, steps, seed), None, 0))
    row = CandidateRow(run_id=part, candidate_id=blob, round=0, parent_ids=[], operator="sft", proposer="sft",
                       artifact_kind="weights", artifact_uri=store.blob_uri(blob), island=-1,
                       summary=f"supervised warm start, {steps} steps of {'+'.join(categories)}, seed {seed}")
    store.write_part("candidates", part, "init", "policy", [row])
    return blob


@task(name="init-policy", **STAGE_OPTIONS)
def init_policy(ref: RunRef) -> str:
    """The run's first policy: the shared supervised warm start of its seed (registry
    stage experimental); returns its candidate id (idempotent)."""
    store = store_for(ref.store_uri)
    if store.has_part("candidates", ref.run_id, "init", "policy"):
        return store.read_part("candidates", ref.run_id, "init", "policy")[0].candidate_id
    config = run_config(ref)
    blob = warm_start(ref, config.grpo.categories, config.grpo.pretrain_steps)
    store.write_part("registry", ref.run_id, "register", "init",
                     [registry_row(ref, 1, blob, "experimental", None, None, None)])
    summary = f"supervised warm start, {config.grpo.pretrain_steps} steps"
    store.write_part("candidates", ref.run_id, "init", "policy", [policy_row(ref, blob, 0, [], "sft", summary)])
    return blob


def step_row(ref: RunRef, candidate_id: str, step: int, result) -> TrainStepRow:
    """A step's row, with where it ran: the Dask worker (or "local") and the torch device."""
    return TrainStepRow(run_id=ref.run_id, candidate_id=candidate_id, step=step, loss=result.loss,
                        metrics=result.metrics, tokens=result.tokens, samples=result.samples, wall_s=result.wall_s,
                        worker=worker_name(), device=str(device()))


@task(name="train-chunk", **STAGE_OPTIONS)
def train_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str) -> str:
    """`n_steps` GRPO steps from the policy `parent_id`, on the run's GPU worker when it
    has a cluster (`tasks.training.placement.run_chunk`); returns the new policy's id."""
    return run_chunk(ref, "train", chunk, first_step, n_steps, grpo_chunk, parent_id)


def grpo_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str) -> tuple[str, str | None]:
    """`train_chunk`'s work: publishes the checkpoint as a candidate and one train_steps
    row per step (keyed by the new candidate) -> (its id, progress status) (idempotent:
    a published chunk is read back, not retrained, and has no status)."""
    store, key = store_for(ref.store_uri), chunk_key(chunk)
    if store.has_part("train_steps", ref.run_id, "train", key):
        return store.read_part("candidates", ref.run_id, "train", key)[0].candidate_id, None
    config, suite = run_config(ref), arith(ref)
    model, optimizer, done = load_checkpoint(store.get_blob(parent_id), config.grpo.lr, device())
    if done != first_step:
        raise RuntimeError(f"policy {parent_id[:12]} has {done} steps but chunk {chunk} starts at step {first_step}")
    train = suite.cases("train")
    results = [train_step(model, optimizer, suite, train, config.grpo, config.seed, s)
               for s in range(first_step, first_step + n_steps)]
    crash_point("train", chunk)
    blob = store.put_blob(save_checkpoint(model.cpu(), optimizer, first_step + n_steps))
    summary = f"grpo steps {first_step}..{first_step + n_steps - 1}"
    store.write_part("candidates", ref.run_id, "train", key,
                     [policy_row(ref, blob, chunk + 1, [parent_id], config.grpo.advantage, summary)])
    rows = [step_row(ref, blob, first_step + i, r) for i, r in enumerate(results)]
    store.write_part("train_steps", ref.run_id, "train", key, rows)
    return blob, f"step {first_step + n_steps}, reward {results[-1].metrics['reward_mean']:.2f}"


def eval_key(split: str, candidate_id: str) -> str:
    return f"{split}.{candidate_id[:24]}"


def evaluation_rows(ref: RunRef, candidate_id: str, cases: Sequence, outputs: Sequence[str],
                    wall_s: float) -> tuple[list[ExecutionRow], list[ScoreRow]]:
    """One ok execution per case (output text as a blob) and its `correct` score."""
    store, suite, config = store_for(ref.store_uri), arith(ref), run_config(ref)
    version, executions, scores = anchored_scorer_version(ref), [], []
    for case, output in zip(cases, outputs):
        execution_id = derived_id(ref.run_id, candidate_id, case.case_id, config.seed, 0)
        executions.append(ExecutionRow(
            run_id=ref.run_id, execution_id=execution_id, candidate_id=candidate_id, case_id=case.case_id,
            split=case.split, seed=config.seed, noise_key=None, attempt=0, status="ok", error=None,
            wall_s=wall_s / len(cases), cpu_s=None, peak_rss_mb=None, tokens_in=None,
            tokens_out=len(output) + 1, cost_usd=None, output_uri=store.blob_uri(store.put_blob(output.encode())),
            trajectory_uri=None,
        ))
        verdict = suite.score(case, output)
        scores.append(ScoreRow(
            run_id=ref.run_id, execution_id=execution_id, candidate_id=candidate_id, case_id=case.case_id,
            split=case.split, scorer=suite.name, scorer_version=version, metric=suite.primary_metric,
            value=verdict.metrics[suite.primary_metric], valid=verdict.valid, reason=verdict.reason,
        ))
    return executions, scores


def accuracy(ref: RunRef, candidate_id: str, split: str) -> float:
    """Greedy exact-match accuracy of the policy on a split, recorded as executions and
    scores (idempotent: a published evaluation is read back)."""
    store, key = store_for(ref.store_uri), eval_key(split, candidate_id)
    if not store.has_part("scores", ref.run_id, "eval", key):
        suite, start = arith(ref), datetime.now(timezone.utc)
        cases = suite.cases(split)
        model = load_policy(store.get_blob(candidate_id), device())
        outputs = greedy_outputs(model, suite, cases)
        wall_s = (datetime.now(timezone.utc) - start).total_seconds()
        executions, scores = evaluation_rows(ref, candidate_id, cases, outputs, wall_s)
        store.write_part("executions", ref.run_id, "eval", key, executions)
        store.write_part("scores", ref.run_id, "eval", key, scores)
    return fmean(r.value for r in store.read_part("scores", ref.run_id, "eval", key))


@task(name="evaluate-policy", **STAGE_OPTIONS)
def evaluate_policy(ref: RunRef, candidate_id: str) -> float:
    """Select-split accuracy of a policy, for tracking the run (never holdout)."""
    return accuracy(ref, candidate_id, "select")


@task(name="register-policy", **STAGE_OPTIONS)
def register_policy(ref: RunRef, candidate_id: str) -> float:
    """Register the final policy (stage stable, alias champion) with its select score
    and its holdout score, measured here only; returns the holdout score (idempotent)."""
    return once(ref, "registry", "register", "final", lambda: [final_registration(ref, candidate_id)])[0].holdout_score


def final_registration(ref: RunRef, candidate_id: str) -> RegistryRow:
    """The final policy's registry row (select and holdout measured), logged to MLflow."""
    select, holdout = accuracy(ref, candidate_id, "select"), accuracy(ref, candidate_id, "holdout")
    tracker_for(ref).log_candidate(
        ref.run_id, candidate_id, params={"loop": run_config(ref).loop, "stage": "stable"},
        metrics={"select_correct": select, "holdout_correct": holdout}, tags={"alias": CHAMPION},
        artifact=store_for(ref.store_uri).get_blob(candidate_id), artifact_name="policy.pt",
    )
    return registry_row(ref, 2, candidate_id, "stable", CHAMPION, select, holdout)


@task(name="summarize-policy")
def policy_summary(ref: RunRef) -> dict[str, object]:
    """The run's registered policy: its scores, the warm start's select score, steps."""
    store = store_for(ref.store_uri)
    registry = {r.stage: r for r in store.read_rows("registry", ref.run_id)}
    final, init = registry.get("stable"), registry.get("experimental")
    steps = store.read_rows("train_steps", ref.run_id)
    return {
        "run_id": ref.run_id, "suite": run_config(ref).suite, "metric": "correct",
        "candidate_id": final.candidate_id if final else None,
        "select_score": final.select_score if final else None,
        "holdout_score": final.holdout_score if final else None,
        "init_select_score": accuracy(ref, init.candidate_id, "select") if init else None,
        "train_steps": len(steps),
        "wall_s_per_step": fmean(s.wall_s for s in steps) if steps else None,
        "device": str(device()),
    }
