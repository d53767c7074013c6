"""paired_rollouts (Luck Is Not Skill): GRPO of a tiny LM on arith with injected,
event-keyed verifier noise, the group's rollouts sharing one noise schedule (paired)
or drawing their own (independent).

    policy <- supervised warm start of the student          (registry: experimental)
    track its select accuracy
    for chunk c of `eval_every` steps until `budget` steps:
        each step: G train prompts x n rollouts, true outcomes by exact match,
                   one noise schedule per group (shared or per rollout) -> observed rewards,
                   gradient probe every `probe_every` steps (covariance trace, both pairings),
                   GRPO advantages and update on the observed rewards
        checkpoint the policy; track its select accuracy (true success, no noise)
    register the final policy with its holdout accuracy     (registry: stable, champion)

Departures from the paper: arith's verifier replaces the 13-tool simulator (see
`tasks.loops.paired_rollouts.noise`), the preregistered AUC gate is the findings script's paired comparison
across seeds, and the probe runs on training batches rather than 8 checkpoints."""

from __future__ import annotations

from prefect import flow

from schemas.loops import PairedRolloutsRun
from tasks.loops.paired_rollouts.paired import train_paired_chunk
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run
from tasks.training.chunks import train_in_chunks
from tasks.training.stages import init_policy, policy_summary, register_policy


def progress_total(config: PairedRolloutsRun) -> int:
    """Optimizer steps a run makes, for progress bars."""
    return config.budget


@flow(name="paired_rollouts", flow_run_name=flow_run_name)
def paired_rollouts(config: PairedRolloutsRun, store_uri: str | None = None, run_id: str | None = None,
                    parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy = train_in_chunks(ref, config, init_policy(ref), train_paired_chunk)
        register_policy(ref, policy)
    return policy_summary(ref)
