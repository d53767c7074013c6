"""grpo: reinforcement learning of a tiny LM's weights from verifiable rewards
(GRPO, DeepSeekMath; Dr. GRPO; the Phantom Advantages group filter) on the arith suite.

    policy <- supervised warm start of the student          (registry: experimental)
    track its select accuracy
    for chunk c of `eval_every` steps until `budget` steps:
        each step: G train prompts x n rollouts, exact-match rewards, group-relative
                   advantages, optional group filter, optional GRPODropout, clipped
                   policy loss, AdamW step
        checkpoint the policy (weights + optimizer); track its select accuracy
    register the final policy with its holdout accuracy     (registry: stable, champion)

Every stage publishes deterministic parts, so a resumed run continues from the last
published chunk and reproduces the uninterrupted run on CPU."""

from __future__ import annotations

import dask
from prefect import flow

from schemas.configs import LOOP_SPECS, RunConfig
from tasks.runs import new_run_id, recorded_run, start_run
from tasks.runtime import RunRef
from tasks.train import evaluate_policy, init_policy, policy_summary, register_policy, train_chunk

SPEC = LOOP_SPECS["grpo"]


def chunk_plan(budget: int, eval_every: int) -> list[tuple[int, int]]:
    """(first step, steps) of each training chunk: `eval_every` steps each, the last one
    shorter when the budget of optimizer steps is not a multiple."""
    return [(first, min(eval_every, budget - first)) for first in range(0, budget, eval_every)]


def train_in_chunks(ref: RunRef, config: RunConfig, policy: str, train) -> str:
    """Evaluate the policy, then train it chunk by chunk with the `train` stage (GRPO's or
    a variant's: same signature), evaluating after each chunk; returns the last policy."""
    evaluate_policy(ref, policy)
    for chunk, (first_step, n_steps) in enumerate(chunk_plan(config.budget, config.grpo.eval_every)):
        with dask.annotate(resources={"GPU": 1}):  # honoured when the stages are submitted to Dask
            policy = train(ref, chunk, first_step, n_steps, policy)
        evaluate_policy(ref, policy)
    return policy


def progress_total(config: RunConfig) -> int:
    """Optimizer steps a run makes, for progress bars."""
    return config.budget


@flow(name="grpo")
def grpo(config: RunConfig, store_uri: str, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    if config.suite != "arith":
        raise ValueError(f"grpo trains arith policies; got suite {config.suite!r}, use --suite arith")
    run_id = run_id or new_run_id(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy = train_in_chunks(ref, config, init_policy(ref), train_chunk)
        register_policy(ref, policy)
    return policy_summary(ref)
