"""The chunk plan and the train-evaluate loop over chunks that the weight-update loops'
flows share (grpo, ppo_pact, opd, paired_rollouts, harness_bandit): the flows call it,
never each other. Changing it changes five loops: run their tests/flows."""

from __future__ import annotations

from schemas.configs import RunConfig
from tasks.runtime.context import RunRef
from tasks.training.stages import evaluate_policy


def chunk_plan(budget: int, eval_every: int) -> list[tuple[int, int]]:
    """(first step, steps) of each training chunk: `eval_every` steps each, the last one
    shorter when the budget of optimizer steps is not a multiple."""
    return [(first, min(eval_every, budget - first)) for first in range(0, budget, eval_every)]


def train_in_chunks(ref: RunRef, config: RunConfig, policy: str, train) -> str:
    """Evaluate the policy, then train it chunk by chunk with the `train` stage (GRPO's or
    a variant's: same signature; it trains on the run's GPU worker when the run has a
    cluster, `tasks.training.placement`), evaluating after each chunk here; returns the
    last policy."""
    evaluate_policy(ref, policy)
    for chunk, (first_step, n_steps) in enumerate(chunk_plan(config.budget, config.grpo.eval_every)):
        policy = train(ref, chunk, first_step, n_steps, policy)
        evaluate_policy(ref, policy)
    return policy
