"""The paired_rollouts loop's training stage: GRPO chunks under event-keyed verifier
noise (`tasks.loops.paired_rollouts.paired_policy.paired_step`). Warm start, evaluation and registration are
the grpo loop's stages (`tasks.training.stages`), which read the same `RunConfig.grpo`.

Idempotent like `tasks.training.stages.train_chunk`: chunk c publishes one checkpoint candidate
and one train_steps row per step (with the true and observed rewards and the gradient
probe in its metrics), and a published chunk is read back, not retrained."""

from __future__ import annotations

from prefect import task

from tasks.loops.paired_rollouts.paired_policy import paired_step
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.placement import run_chunk
from tasks.training.policy import device, load_checkpoint, save_checkpoint
from tasks.training.stages import arith, chunk_key, policy_row, step_row


@task(name="train-paired-chunk", **STAGE_OPTIONS)
def train_paired_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str) -> str:
    """`n_steps` noisy GRPO steps from the policy `parent_id`, on the run's GPU worker when
    it has a cluster (`tasks.training.placement.run_chunk`); returns the new checkpoint's
    candidate id."""
    return run_chunk(ref, "train", chunk, first_step, n_steps, paired_chunk, parent_id)


def paired_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str) -> tuple[str, str | None]:
    """`train_paired_chunk`'s work -> (new candidate id, progress status) (idempotent: a
    published chunk is read back and has no status)."""
    store, key = store_for(ref.store_uri), chunk_key(chunk)
    if store.has_part("train_steps", ref.run_id, "train", key):
        return store.read_part("candidates", ref.run_id, "train", key)[0].candidate_id, None
    config, suite = run_config(ref), arith(ref)
    noise = config.paired_rollouts
    model, optimizer, done = load_checkpoint(store.get_blob(parent_id), config.grpo.lr, device())
    if done != first_step:
        raise RuntimeError(f"policy {parent_id[:12]} has {done} steps but chunk {chunk} starts at step {first_step}")
    train = suite.cases("train")
    results = [paired_step(model, optimizer, suite, train, config.grpo, noise, config.seed, s)
               for s in range(first_step, first_step + n_steps)]
    crash_point("train", chunk)
    blob = store.put_blob(save_checkpoint(model.cpu(), optimizer, first_step + n_steps))
    summary = (f"grpo steps {first_step}..{first_step + n_steps - 1}, {noise.noise_kind} noise "
               f"{noise.noise_rate:g} {noise.noise_pairing}")
    store.write_part("candidates", ref.run_id, "train", key,
                     [policy_row(ref, blob, chunk + 1, [parent_id], f"paired-{noise.noise_pairing}", summary)])
    store.write_part("train_steps", ref.run_id, "train", key,
                     [step_row(ref, blob, first_step + i, r) for i, r in enumerate(results)])
    true_reward = results[-1].metrics["reward_true_mean"]
    return blob, f"step {first_step + n_steps}, true reward {true_reward:.2f}"
