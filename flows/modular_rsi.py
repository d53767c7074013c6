"""modular_rsi: find recurring execution defects by contrasting successful and failed
trajectories, then evolve each of five harness modules separately from one base on a
task pool kept apart from the benchmark, then integrate them (ModularRSI).

The artifact is a toolsim harness read as five modules (retrying tool wrapper,
observation parser, context, step loop, completion detector;
`tasks/loops/modular_rsi/modules.py` says which rule kinds each owns). The pool is the
train split of `pool_templates` templates; the other templates are never rolled.

    H_0 <- the seed harness (every module at its base version)
    for round r = 1 .. budget:
        sample:   the next `batch` pool tasks (a task is a template, its instances
                  are its rollouts)
        execute:  run the agent under H_{r-1}; score: each rollout's task check
        distill:  group rollouts per task by outcome:
                    mixed       -> contrast a success with a failure: the first divergent event
                    no success  -> one-sided diagnosis: the step that ended the attempt
                    all success -> efficiency: calls beyond the task's fewest
                  event type -> module; defects recurring in `min_support` tasks are findings
        modify:   each finding's module edits only its scope, every one from H_{r-1}
                  (ablation `mode=monolithic`: whole-harness edits in sequence)
        gate:     (1) syntax + interface (only its module changed), (2) overfit diff
                  review (no template ids or case literals), (3) a run on 2 batch tasks
        integrate: merge the accepted module versions into H_r; record the conflicts
    in one transaction:
        gate + register: H_budget, frozen, against H_0 on the select split (paired);
                         no worse -> champion (holdout measured), else H_0 stays
    report: H_0 and H_budget on the benchmark (test split: pool and held-out templates)
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import ModularRSIRun
from tasks.loops.modular_rsi.gate import evolve_modules, final_eval, integrate_round, mrsi_summary, register_champion
from tasks.loops.modular_rsi.stages import analyse_round, plant, rollout
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: ModularRSIRun) -> int:
    """Rounds a run makes, for progress bars."""
    return config.budget


@flow(name="modular_rsi", flow_run_name=flow_run_name)
def modular_rsi(config: ModularRSIRun, store_uri: str | None = None, run_id: str | None = None,
                parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        plant(ref)
        for round_index in range(1, config.budget + 1):
            rollout(ref, round_index)
            analyse_round(ref, round_index)
            with transaction():
                evolve_modules(ref, round_index)
                integrate_round(ref, round_index)
        with transaction():
            register_champion(ref, config.budget)
        final_eval(ref, config.budget)
        summary = mrsi_summary(ref, config.budget)
    return summary
