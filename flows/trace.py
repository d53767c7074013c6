"""trace: when a score changes, did the behaviour change or the ruler? (TRACE)

Nothing is improved; the protocol measures. The agents under test are fixed (one keyed
on tool semantics, one on literal names) and run toolsim's tasks through a view of the
frozen tools that one perturbation operator changes.

    conditions <- original, rename, reorder (perturbations), swap_descriptions (the
                  positive control: a known behaviour change), rerun (identical, other
                  event-keyed faults: the noise floor)
    sample:   publish the agents as the run's candidates (round 0)
    for repeat r = 0 .. budget-1:            (task, policy and seed frozen within a pair)
        execute:  every agent on every task under every condition; store the
                  trajectory (calls, observation hashes, final state)
    score:    native graders v1 (final-state checker; trace matcher with hard-coded
              tool names, the planted bug) on the stored trajectories
    rescore:  the same stored trajectories, byte-identical, under the fixed graders
              (v2); nothing is re-run
    distill:  behaviour diff of each pair: actions, observations, final state
    gate:     per (grader, agent, perturbation): Δreward with a paired 95% CI, the
              equivalence test within ±margin, behaviour_changed, the rescore Δ and the
              rerun flip rate -> no effect / grader artifact / behaviour effect /
              inconclusive
    register: nothing is promoted; the verdicts are the release
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import TraceRun
from tasks.loops.trace.attribution import attribute, diff_behaviour, protocol_summary
from tasks.loops.trace.stages import execute_conditions, publish_agents, rescore_trajectories, score_trajectories
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: TraceRun) -> int:
    """Repeats executed, for progress bars."""
    return config.budget


@flow(name="trace", flow_run_name=flow_run_name)
def trace(config: TraceRun, store_uri: str | None = None, run_id: str | None = None,
          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        ids = publish_agents(ref)
        for repeat in range(config.budget):
            execute_conditions(ref, repeat, ids)
        score_trajectories(ref)
        rescore_trajectories(ref, config.trace.rescore_version)
        diff_behaviour(ref)
        attribute(ref, ids)
    return protocol_summary(ref)
