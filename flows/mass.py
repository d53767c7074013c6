"""mass: evolve a multi-role workflow, then behaviour-clone it into one small policy
(MASS: Multi-Agent Self-Supervision).

The workflow is a planner with a return-field contract and workers that each own a
toolsim harness rule (tasks/loops/mass/workflow.py); the "shared model" is a tiny torch
policy over request features (tasks/loops/mass/policy.py).

    W_0 <- single-agent workflow; pi_old <- behaviour-clone W_0's scripted runs
    inner, for generation g = 1 .. G:
        sample:  children of W_{g-1} by mutation operators under structural constraints
                 (add/drop role, reorder, add/drop return field; or the LLM optimizer)
        execute: every child and W_{g-1} run the train cases (paired noise)
        score:   pairwise per case: outcome checker, then fewer tool calls
        in one transaction:
            gate: W_g <- the child with most net wins if not worse, else W_{g-1}
    outer:
        distill:  rerun the lineage W_0 .. W_G on the train cases (repeats); per case and
                  repeat the pairwise-best run, kept if it succeeded; SFT examples =
                  (request features, rules applied), the workflow spec removed
        register: pi_new <- behaviour-clone the examples
        in one transaction:
            gate + register: pi_new vs W_G paired on select; the champion if not worse
    report: holdout/test success and calls of W_0, W_G, pi_old, pi_new and W_G run by pi_old
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import MassRun
from tasks.loops.mass.gate import evaluate, gate_workflow, mass_summary, register_policy
from tasks.loops.mass.stages import distill_policy, inner_generation, seed
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: MassRun) -> int:
    """Generations a run makes, for progress bars."""
    return config.budget


@flow(name="mass", flow_run_name=flow_run_name)
def mass(config: MassRun, store_uri: str | None = None, run_id: str | None = None,
         parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        seed(ref)
        for g in range(1, config.budget + 1):
            inner_generation(ref, g)
            with transaction():
                gate_workflow(ref, g)
        distill_policy(ref, config.budget)
        with transaction():
            register_policy(ref, config.budget)
        evaluate(ref, config.budget)
        summary = mass_summary(ref, config.budget)
    return summary
