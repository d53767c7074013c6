"""algoevo: AlgoEvo — accumulate effective modifications from algorithm search as a
design skill for later tasks.

    skill_0 <- the initial design skill (every operator family at prior weight 1)
    for each task in algoevo.tasks (the last one held out):
        load the skill as it stands (frozen for the whole task)
        for evaluation k = 1 .. budget:
            sample:  UCB over the task's experience tree picks a node (scores well +
                     worth exploring); the agent (mutate's typed operators, families
                     drawn by the skill's prior) edits its program
            execute: the child runs on the task's select cases in the sandbox
            score:   the task objective (the suite's trusted scorer)
            distill: an experience card (operator family + edits, conditions,
                     rationale, before, after, eval_idx) attached by lineage; node
                     statistics updated along the path to the root
        register: the task's best program (`<task>/algoevo-best`, held-out score)
        if a source task, in one transaction:
            gate:     an operator family with positive mean delta on >= 2 distinct
                      tasks is promoted into the skill (higher prior weight)
            register: the updated skill (`<suite>/algoevo-skill`); the next task starts
                      with it, from its own seed program (code inheritance off)
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import AlgoEvoRun
from tasks.loops.algoevo.gate import gate_patterns, register_best, register_skill
from tasks.loops.algoevo.stages import init_skill, search_task
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: AlgoEvoRun) -> int:
    """Evaluations: each task's root, then `--budget` children per task."""
    return len(config.algoevo.tasks) * (config.budget + 1)


@flow(name="algoevo", flow_run_name=flow_run_name)
def algoevo(config: AlgoEvoRun, store_uri: str | None = None, run_id: str | None = None,
            parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, config.evaluated_suites(), parent_run_id)
    s, last = config.algoevo, len(config.algoevo.tasks) - 1
    with recorded_run(ref):
        initial = init_skill(ref)
        skill = register_skill(ref, -1, initial, previous_id="")
        records = []
        for position in range(len(s.tasks)):
            loaded = skill if s.skill == "promoted" else initial
            records.append(register_best(ref, search_task(ref, position, loaded)))
            if position < last:
                with transaction():
                    promoted = gate_patterns(ref, position, skill)
                    skill = register_skill(ref, position, promoted, previous_id=skill)
    return {"run_id": run_id, "skill": skill[:16],
            "tasks": [{k: r[k] for k in ("task_id", "split", "skill_ver", "evals", "root_score", "best",
                                         "evals_to_best", "heldout_metric", "curve")} for r in records]}
