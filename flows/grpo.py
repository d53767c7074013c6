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

from prefect import flow

from schemas.loops import GRPORun
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run
from tasks.training.chunks import train_in_chunks
from tasks.training.stages import init_policy, policy_summary, register_policy, train_chunk


def progress_total(config: GRPORun) -> int:
    """Optimizer steps a run makes, for progress bars."""
    return config.budget


@flow(name="grpo", flow_run_name=flow_run_name)
def grpo(config: GRPORun, store_uri: str | None = None, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy = train_in_chunks(ref, config, init_policy(ref), train_chunk)
        register_policy(ref, policy)
    return policy_summary(ref)
