"""dense: turn old trajectories into usable feedback without outcome labels (DENSE).

The receiver (toolsim's procedural agent), the environment and the hidden verifier are
frozen; what persists is a feedback document carried from one attempt to the next
attempt at the same task (REFIT protocol: the same initial trajectory for every method,
outcomes hidden, the environment reset and every file recreated).

    sample:   the receiver's starter harness
    for repeat r = 0 .. budget-1:
        execute:  the initial attempt of every task (its own event-keyed noise)
        distill:  from the same stored trajectory, one feedback document per method:
                  none | raw error dump | flat summary | tree | tree without shortcut
                  and reconciliation | outcome-labelled (the reference)
                  tree: group actions and observations by subgoal (the template's plan
                  steps) into a nested task tree; compress a subgoal's repeated failed
                  attempts into a shortcut (working operation, failure causes,
                  supporting observations); the parent re-checks issues its children
                  left open, and closes an issue only with a later success of the same
                  subgoal; render completed branches briefly, unresolved ones in full
        execute:  reset, then retry every task with only the feedback carried over
                  (every method meets the same retry noise)
    score:    strict pass: every hidden goal and guard holds
    gate:     the task's memory (the tree of repeat 0) against its current memory on
              every repeat's retry noise, select tasks only; each method − none with a
              task-bootstrap 95% CI
    register: each admitted memory as champion of toolsim/dense/<task>
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import DenseRun
from tasks.loops.dense.gate import dense_summary, gate_memories, register_memories
from tasks.loops.dense.stages import distill_feedback, execute_initial, execute_retries, publish_starter
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: DenseRun) -> int:
    """Repeats retried, for progress bars."""
    return config.budget


@flow(name="dense", flow_run_name=flow_run_name)
def dense(config: DenseRun, store_uri: str | None = None, run_id: str | None = None,
          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        starter = publish_starter(ref)
        for repeat in range(config.budget):
            execute_initial(ref, repeat)
            distill_feedback(ref, repeat, starter)
            execute_retries(ref, repeat)
        with transaction():
            gate_memories(ref)
            register_memories(ref)
    return dense_summary(ref)
