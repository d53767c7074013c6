"""graphskillevo: a population of graph-structured skills evolved by mutation and
crossover, every offspring checked for validity before it runs (GraphSkillEvo).

A skill has two layers: global principles (flags, each a toolsim harness rule) and a
step graph (steps are tool calls or picks, edges are gated by observations); it runs
as the harness it compiles to (`tasks/loops/graphskillevo/graph.py`; `operators.py`
lists how mutation and crossover depart from the paper).

    P_0 <- {the seed skill}: the default plans as a graph, no principles; score it on val
    for generation g = 1 .. G:
        execute: every skill in P_{g-1} runs the same batch of `batch` train tasks
        score:   task success on that batch
        distill: keep only failed trajectories, at most `max_failures` per skill
        sample:  `offspring` children by the frozen operator rotation:
                   mutation:  edit one skill's principles or step graph from its failures
                   crossover: swap a subgraph rooted at a node two skills share,
                              and merge their principles
        in one transaction:
            gate: check structural validity (an invalid child is recorded with its
                  reason and never runs), score valid children on the validation
                  split, P_g <- top `population` of P_{g-1} ∪ children
    in one transaction:
        register: the best skill on validation after G generations (holdout measured)
    report: the seed and the champion on the test split (reporting only)
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import GraphSkillEvoRun
from tasks.loops.graphskillevo.gate import (
    choose_champion,
    final_test,
    gate_generation,
    gse_summary,
    register_champion,
)
from tasks.loops.graphskillevo.stages import distill, plant, propose, run_batch
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: GraphSkillEvoRun) -> int:
    """Generations a run makes, for progress bars."""
    return config.budget


@flow(name="graphskillevo", flow_run_name=flow_run_name)
def graphskillevo(config: GraphSkillEvoRun, store_uri: str | None = None, run_id: str | None = None,
                  parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        seed = plant(ref)
        with transaction():
            gate_generation(ref, 0, [seed])
        for gen in range(1, config.budget + 1):
            run_batch(ref, gen)
            distill(ref, gen)
            children = propose(ref, gen)
            with transaction():
                gate_generation(ref, gen, children)
        with transaction():
            choose_champion(ref, config.budget)
            register_champion(ref, config.budget)
        final_test(ref, config.budget)
        summary = gse_summary(ref, config.budget)
    return summary
