"""aide2: AIDE²'s outer loop — recursive improvement of the research agent itself.

    agent_0 <- the initial evolve agent; best <- -inf
    for node n = 0 .. N-1:
        agent_n  <- propose (n = 0: initial; else TPE over earlier nodes' hidden composites)
        for each selection suite s: run evolve(agent_n) on s with a fixed budget (a subflow)
        composite_n <- mean over s of the normalised holdout score of its champion (hidden)
        accept agent_n iff composite_n > best; record the node tree
"""

from __future__ import annotations

from prefect import flow

from flows.evolve import evolve
from schemas.configs import RunConfig
from schemas.loops import Aide2Run, EvolveRun
from tasks.loops.aide2.outer import child_run_id, gate_agent, propose_agent
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run


def inner_config(config: Aide2Run, suite: str, agent) -> EvolveRun:
    """The child evolve run: same seed for every node, so agents are compared on the
    same cases and seeds."""
    shared = config.model_dump(include=set(RunConfig.model_fields) - {"loop", "suite", "budget", "suite_params"})
    return EvolveRun(**shared, suite=suite, budget=config.inner_budget, evolve=agent)


def progress_total(config: Aide2Run) -> int:
    """Inner candidate evaluations over all nodes and suites, for progress bars."""
    return config.budget * len(config.inner_suites) * (config.inner_budget + 1)


@flow(name="aide2", flow_run_name=flow_run_name)
def aide2(config: Aide2Run, store_uri: str | None = None, run_id: str | None = None, parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None (scheduled deployments); else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, tuple(config.inner_suites), parent_run_id)
    accepted = []
    with recorded_run(ref):
        for node in range(config.budget):
            agent = propose_agent(ref, node)
            summaries = [
                evolve(inner_config(config, suite, agent), ref.store_uri, child_run_id(ref, node, suite), run_id)
                for suite in config.inner_suites
            ]
            if gate_agent(ref, node, agent, summaries):
                accepted.append(node)
    return {"run_id": run_id, "nodes": config.budget, "accepted_nodes": accepted}
