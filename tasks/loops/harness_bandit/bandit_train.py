"""The harness_bandit loop's training stage: scheduled multi-harness GRPO chunks
(`tasks.loops.harness_bandit.bandit.bandit_step`). Warm start, evaluation and registration are the grpo
loop's stages (`tasks.training.stages`); the flow sets `grpo.categories` to the harnesses, so
the warm start, the suite's cases and the evaluations cover exactly the harnesses.

The scheduler state (visits, scores, sketch EMAs, window) travels in the checkpoint's
meta beside the optimizer state, so a resumed chunk continues the scheduler exactly.
Idempotent like `tasks.training.stages.train_chunk`: a published chunk is read back."""

from __future__ import annotations

import torch
from prefect import task

from suites.arith.lm import from_bytes, to_bytes
from tasks.loops.harness_bandit.bandit import SchedulerState, bandit_step
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.placement import run_chunk
from tasks.training.policy import device, load_checkpoint
from tasks.training.stages import arith, chunk_key, policy_row, step_row


def _cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    return value


def save_bandit_checkpoint(model, optimizer, step: int, state: SchedulerState) -> bytes:
    """`tasks.training.policy.save_checkpoint`'s layout plus the scheduler state in the meta."""
    return to_bytes(model, {"step": step, "optimizer": _cpu(optimizer.state_dict()), "scheduler": state.to_meta()})


def scheduler_state(data: bytes, harnesses: int) -> SchedulerState:
    """The scheduler state a checkpoint carries; a fresh one for the warm start."""
    meta = from_bytes(data)[1]
    return SchedulerState.from_meta(meta["scheduler"]) if meta.get("scheduler") else SchedulerState.fresh(harnesses)


@task(name="train-bandit-chunk", **STAGE_OPTIONS)
def train_bandit_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str) -> str:
    """`n_steps` scheduled GRPO steps from the policy `parent_id`, on the run's GPU worker
    when it has a cluster (`tasks.training.placement.run_chunk`); returns the new
    checkpoint's candidate id."""
    return run_chunk(ref, "train", chunk, first_step, n_steps, bandit_chunk, parent_id)


def bandit_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str) -> tuple[str, str | None]:
    """`train_bandit_chunk`'s work -> (new candidate id, progress status) (idempotent: a
    published chunk is read back and has no status)."""
    store, key = store_for(ref.store_uri), chunk_key(chunk)
    if store.has_part("train_steps", ref.run_id, "train", key):
        return store.read_part("candidates", ref.run_id, "train", key)[0].candidate_id, None
    config, suite = run_config(ref), arith(ref)
    hb = config.harness_bandit
    parent = store.get_blob(parent_id)
    model, optimizer, done = load_checkpoint(parent, config.grpo.lr, device())
    if done != first_step:
        raise RuntimeError(f"policy {parent_id[:12]} has {done} steps but chunk {chunk} starts at step {first_step}")
    state = scheduler_state(parent, len(hb.harnesses))
    train = suite.cases("train")
    pools = [[c for c in train if c.payload["category"] == h] for h in hb.harnesses]
    results = [bandit_step(model, optimizer, suite, pools, config.grpo, hb, state, config.seed, s)
               for s in range(first_step, first_step + n_steps)]
    crash_point("train", chunk)
    blob = store.put_blob(save_bandit_checkpoint(model.cpu(), optimizer, first_step + n_steps, state))
    visits = ", ".join(f"{h} {v}" for h, v in zip(hb.harnesses, state.visits))
    summary = f"{hb.scheduler} steps {first_step}..{first_step + n_steps - 1}; visits {visits}"
    store.write_part("candidates", ref.run_id, "train", key,
                     [policy_row(ref, blob, chunk + 1, [parent_id], hb.scheduler, summary)])
    store.write_part("train_steps", ref.run_id, "train", key,
                     [step_row(ref, blob, first_step + i, r) for i, r in enumerate(results)])
    return blob, f"step {first_step + n_steps}, {summary}"
