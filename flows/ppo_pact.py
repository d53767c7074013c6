"""ppo_pact: actor-critic RL of a tiny LM's weights from a terminal exact-match reward on
the arith suite, with a learned critic trained as PPO's value regression or as PACT's
importance-corrected probability (PACT: From Credit Assignment to Critic Alignment).

    actor <- supervised warm start; critic <- its trunk with a zero head   (registry: experimental)
    track the actor's select accuracy
    for chunk c of `eval_every` steps until `budget` steps:
        each step: rollouts of the actor, critic values, GAE(lambda = 1) advantages,
                   actor update first, then the critic:
                   ppo  -> clipped value MSE toward the outcome
                   pact -> BCE toward the outcome, weighted by the updated actor's
                           current-token ratio, out-of-range tokens masked
        checkpoint actor and critic; track the actor's select accuracy
    register the final actor with its holdout accuracy                       (registry: stable, champion)

Departs from the paper: see `tasks.loops.ppo_pact.actor_critic` (one actor step per batch, critic
initialised from the warm start, no advantage whitening). Every stage publishes
deterministic parts, so a resumed run reproduces the uninterrupted run on CPU."""

from __future__ import annotations

from prefect import flow

from schemas.loops import PPOPACTRun
from tasks.loops.ppo_pact.critic_train import init_actor_critic, train_actor_critic
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run
from tasks.training.chunks import chunk_plan
from tasks.training.stages import evaluate_policy, policy_summary, register_policy


def progress_total(config: PPOPACTRun) -> int:
    """Optimizer steps a run makes, for progress bars."""
    return config.budget


@flow(name="ppo_pact", flow_run_name=flow_run_name)
def ppo_pact(config: PPOPACTRun, store_uri: str | None = None, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        actor, critic = init_actor_critic(ref)
        evaluate_policy(ref, actor)
        for chunk, (first_step, n_steps) in enumerate(chunk_plan(config.budget, config.ppo_pact.eval_every)):
            actor, critic = train_actor_critic(ref, chunk, first_step, n_steps, actor, critic)
            evaluate_policy(ref, actor)
        register_policy(ref, actor)
    return policy_summary(ref)
