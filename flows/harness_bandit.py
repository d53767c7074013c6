"""harness_bandit (HarnessBandit): multi-harness GRPO of a tiny LM on arith where each
optimizer step trains in ONE harness chosen online by learnability and
transferability, against uniform and round-robin schedulers (`scheduler`).

    policy <- supervised warm start on every harness       (registry: experimental)
    track its select accuracy
    for chunk c of `eval_every` steps until `budget` steps:
        each step: pick harness h (bandit: fused score + visit bonus, exploration floor),
                   G prompts of h x n rollouts, GRPO update,
                   learnability = mean |advantage|, transferability = cosine of the
                   gradient sketch with the other harnesses' EMAs, fuse, update state
        checkpoint the policy and scheduler state; track its select accuracy
    register the final policy with its holdout accuracy     (registry: stable, champion)

Departures from the paper: a harness is an arith category (a task format of the same
tiny policy) instead of an agent scaffold, and no harness is held out."""

from __future__ import annotations

from prefect import flow

from schemas.loops import HarnessBanditRun
from tasks.loops.harness_bandit.bandit_train import train_bandit_chunk
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run
from tasks.training.chunks import train_in_chunks
from tasks.training.stages import init_policy, policy_summary, register_policy


def progress_total(config: HarnessBanditRun) -> int:
    """Optimizer steps a run makes, for progress bars."""
    return config.budget


def with_harness_categories(config: HarnessBanditRun) -> HarnessBanditRun:
    """The config with GRPO's categories set to the harnesses: the warm start, the
    suite's cases and the evaluations then cover exactly the harnesses."""
    grpo = config.grpo.model_copy(update={"categories": config.harness_bandit.harnesses})
    return config.model_copy(update={"grpo": grpo})


@flow(name="harness_bandit", flow_run_name=flow_run_name)
def harness_bandit(config: HarnessBanditRun, store_uri: str | None = None, run_id: str | None = None,
                   parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    config = with_harness_categories(config)
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy = train_in_chunks(ref, config, init_policy(ref), train_bandit_chunk)
        register_policy(ref, policy)
    return policy_summary(ref)
