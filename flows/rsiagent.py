"""rsiagent: practise in a new environment first, then carry verified experience to the
target tasks (RSIAgent). Model weights and the update procedure are frozen; what
persists is an external environment memory of (tool, event, state predicate) ->
(cause, remedial action) entries.

    M <- the store's current memory (champion of toolsim/rsiagent), else empty
    for round r = 0 .. R-1:                                   (preparation; train cells only)
        sample:   the curriculum agent plans practice tasks over cells of
                  template x parameter x failure event:
                    breadth (r < breadth_rounds): stratified over templates, 2 workers
                    depth: a bandit on the cells with the lowest verified success
                           or a new failure signature
        execute:  the execution agent runs every task with the memory M
        score:    the independent verifier checks the backend's end state
        distill:  on each failure the memory writer proposes a remedy, re-runs the
                  task with the revised memory and keeps it only when the verifier
                  passes it (revising entries of the same condition): M'
        in one transaction:
            gate:     M' against M on the select split (paired, same noise):
                      admitted iff new and no loss; evidence names every entry's runs
            register: an admitted M' becomes the champion: M <- M'
        (after the last breadth round: M_breadth <- M)
    in one transaction:
        register: freeze M (stable)
    test:     the target split, never read before, under frozen M, no memory and
              M_breadth: execution and verification only, no curriculum, no update
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import RSIAgentRun
from tasks.loops.rsiagent.gate import (empty_memory, freeze_memory, gate_memory, register_memory, rsiagent_summary,
                                       test_targets)
from tasks.loops.rsiagent.stages import distill_memory, execute_practice, plan_practice, start_memory
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: RSIAgentRun) -> int:
    """Practice rounds, for progress bars."""
    return config.budget


@flow(name="rsiagent", flow_run_name=flow_run_name)
def rsiagent(config: RSIAgentRun, store_uri: str | None = None, run_id: str | None = None,
             parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        memory = breadth = start_memory(ref)
        for round_index in range(config.budget):
            plan_practice(ref, round_index)
            execute_practice(ref, round_index, memory)
            candidate = distill_memory(ref, round_index, memory)
            with transaction():
                memory = gate_memory(ref, round_index, candidate, memory)
                register_memory(ref, round_index)
            if round_index < config.rsiagent.breadth_rounds:
                breadth = memory
        with transaction():
            frozen = freeze_memory(ref, memory)
        arms = {"frozen": frozen, "none": empty_memory(ref), "breadth": breadth}
        test_targets(ref, {arm: arms[arm] for arm in config.rsiagent.arms})
        summary = rsiagent_summary(ref)
    return summary
