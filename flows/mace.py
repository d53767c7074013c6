"""mace: co-learn what to remember and how to hand memory to agents (MACE). The base
agent is frozen (no gradient training); what persists is MemGoG, a graph of functional
units (condition, action, output) with utilities, support/conflict relations and the
presentation-choice statistics, on toolsim's roles intake -> lookup -> action -> verify.

    M <- the champion of toolsim/mace (start_from: champion), else the units mined
         from past logs (the seed harness on the train requests)
    M_0 <- M
    for round r = 0 .. R-1:
        sample:   a batch of train requests; for every role of every request, describe
                  (role, stage, information need = template), take the candidate unit
                  sets (relevant, mutually supporting, no conflict, no high-risk unit,
                  within the injection budget) and pick a (set, form) arm by Thompson
                  sampling: joint over (set, form) pairs, or factorised (sets, forms)
        execute:  render each set as a guideline, checklist or constraint; run the
                  request with every role's rendering
        score:    the task result (the backend's end state meets the goal)
        distill:  log units, forms, role outputs and results; update unit utility
                  (smoothed return), support/conflict relations and the (set, form)
                  statistics; mine new units from the round's logs: M'
        in one transaction:
            gate:     M' against M on the select split (greedy, paired):
                      admitted iff new and no loss; evidence names the moved arms
            register: an admitted M' becomes the champion: M <- M'
    in one transaction:
        register: freeze M (stable, holdout measured once)
    test:     the test split under M, M_0 (feedback off) and no memory
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import MaceRun
from tasks.loops.mace.gate import freeze_memory, gate_memory, mace_summary, register_memory, test_arms
from tasks.loops.mace.stages import distill_memory, execute_requests, sample_injections, start_memory
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: MaceRun) -> int:
    """Co-learning rounds, for progress bars."""
    return config.budget


@flow(name="mace", flow_run_name=flow_run_name)
def mace(config: MaceRun, store_uri: str | None = None, run_id: str | None = None,
         parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        memory = start = start_memory(ref)
        for round_index in range(config.budget):
            sample_injections(ref, round_index, memory)
            execute_requests(ref, round_index, memory)
            candidate = distill_memory(ref, round_index, memory)
            with transaction():
                memory = gate_memory(ref, round_index, candidate, memory)
                register_memory(ref, round_index)
        with transaction():
            frozen = freeze_memory(ref, memory)
        arms = {"memory": frozen, "no_feedback": start, "no_memory": ""}
        test_arms(ref, {arm: arms[arm] for arm in config.mace.arms})
        summary = mace_summary(ref)
    return summary
