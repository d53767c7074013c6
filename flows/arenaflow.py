"""arenaflow: one knockout comparison both trains the policy and curates reusable skills
(ArenaFlow).

The policy is a tiny torch softmax over toolsim rule decisions per request template
(tasks/loops/arenaflow/policy.py); a skill adds a logit prior to one decision.

    pi_0 <- untrained policy; L_0 <- empty library
    for round r = 1 .. R:
        for each request q of the round's batch:
            sample:  recall q's skills from L, select top_k by utility (their priors);
                     pi samples a group of G trajectories
            execute: run them (the same request and noise: a paired group)
            score:   knockout tournament: each match -> winner, its key steps, the
                     skills used at key steps; the ranking -> trajectory advantages
            distill: positive trajectories: key-step decisions get extra credit scaled
                     by survival depth (negatives never flipped); the champion's
                     experience merged into L (new skill, or replaces a similar one)
        in one transaction:
            gate:    utilities accumulate from usage attribution; a skill still
                     negative after min_obs observations is pruned (one decision each)
        register:    pi_r <- one policy update with step-level advantages; L_r active
    in one transaction:
        gate + register: (pi_R, L_R) vs pi_0 paired on select; the champion if not worse
    report: test success of pi_0 and (pi_R, L_R)
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import ArenaFlowRun
from tasks.loops.arenaflow.gate import arenaflow_summary, gate_skills, register_policy
from tasks.loops.arenaflow.stages import arena_round, plant
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: ArenaFlowRun) -> int:
    """Rounds a run makes, for progress bars."""
    return config.budget


@flow(name="arenaflow", flow_run_name=flow_run_name)
def arenaflow(config: ArenaFlowRun, store_uri: str | None = None, run_id: str | None = None,
              parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        plant(ref)
        for r in range(1, config.budget + 1):
            arena_round(ref, r)
            with transaction():
                gate_skills(ref, r)
        with transaction():
            register_policy(ref, config.budget)
        summary = arenaflow_summary(ref, config.budget)
    return summary
