"""growing_harness: grow one shared harness from a strategy-free scaffold by
failure-driven repair over a rolling window, with a held-out validation gate that
rolls back the harness AND the window AND the cursor AND the memories together
(Growing Harness).

The artifact is a toolsim harness (rules and skills), grown by the non-LLM rule
proposer from the failing tasks' tool-call traces (`tasks/loops/growing_harness/grow_logic.py` lists how this
departs from the paper).

    state <- (scaffold, window = [], cursor = 0); validate it: the last accepted version
    for step s = 1 .. budget:
        fill:    walk the train stream from the cursor under the working harness;
                 failing tasks enter the window until it holds window_size
                 -- window empty and stream exhausted: stop
        sample:  the proposer reads the window's traces and jointly patches up to
                 repair_batch shared failures (no patch left: every task gets an attempt)
        execute: the patched harness re-runs the window's tasks
        distill: solved tasks leave (each is one fix) and the patch is kept; unsolved
                 tasks stay, and exit after retry_limit attempts; a patch that solved
                 none is discarded and remembered
        in one transaction:
            gate:   after every gate_every fixes, validation success on the select
                    split; below the last accepted version's -> roll back harness,
                    window, cursor and memories to it; else it is the last accepted
            commit: the state the next step starts from
    in one transaction:
        gate once more before the final test; register the last accepted harness,
        frozen (holdout measured); gate_every = 0: no gate, the working harness
    report the scaffold and the grown harness on the test split
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import GrowingHarnessRun
from tasks.loops.growing_harness.grow import fill_window, repair, rerun, scaffold, settle_window
from tasks.loops.growing_harness.grow_gate import (
    admit_scaffold,
    check_version,
    commit_state,
    final_check,
    grow_summary,
    register_final,
)
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run


def progress_total(config: GrowingHarnessRun) -> int:
    """Steps a run makes (the scaffold included), for progress bars."""
    return config.budget + 1


@flow(name="growing_harness", flow_run_name=flow_run_name)
def growing_harness(config: GrowingHarnessRun, store_uri: str | None = None, run_id: str | None = None,
                    parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        seed = scaffold(ref)
        admit_scaffold(ref)
        last_step = 0
        for step in range(1, config.budget + 1):
            if fill_window(ref, step) == 0:
                break
            candidate = repair(ref, step)
            if candidate is not None:
                rerun(ref, step, candidate)
            settle_window(ref, step, candidate)
            with transaction():
                check_version(ref, step)
                commit_state(ref, step)
            last_step = step
        with transaction():
            final_check(ref, last_step)
            register_final(ref, last_step)
        summary = grow_summary(ref, seed)
    return summary
