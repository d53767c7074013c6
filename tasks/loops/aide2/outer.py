"""AIDE²'s outer-loop stages. The artifact is the inner research agent: the `evolve`
strategy's parameters (EvolveConfig). Offline, the outer improver is Optuna TPE over
those parameters; each node's TPE draw is seeded by (run seed, node) and conditioned
on the stored earlier nodes, so a resumed run proposes the same agents.

Scores: a candidate agent's *public* score is the select score its champions reached
(the inner agent saw it); its *hidden* composite is the mean normalised holdout score of
its champions, which only the outer gate sees."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean
from typing import Sequence

import optuna
from prefect import task

from schemas.configs import EvolveConfig
from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, NodeRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.retry import STAGE_OPTIONS

optuna.logging.set_verbosity(optuna.logging.WARNING)

SEARCH_SPACE: dict[str, optuna.distributions.BaseDistribution] = {
    "islands": optuna.distributions.IntDistribution(1, 8),
    "children_per_round": optuna.distributions.IntDistribution(2, 12),
    "tournament_size": optuna.distributions.IntDistribution(1, 6),
    "crossover_rate": optuna.distributions.FloatDistribution(0.0, 0.6),
    "migration_interval": optuna.distributions.IntDistribution(1, 8),
    "mutations_per_child": optuna.distributions.IntDistribution(1, 4),
    "failure_memory": optuna.distributions.CategoricalDistribution([True, False]),
}


def agent_params(agent: EvolveConfig) -> dict:
    return {name: getattr(agent, name) for name in SEARCH_SPACE}


def tpe_proposal(history: Sequence[tuple[dict, float]], seed: int) -> dict:
    """Next agent parameters from TPE conditioned on (params, hidden composite) history."""
    sampler = optuna.samplers.TPESampler(seed=seed % 2**32)  # numpy's legacy seeding takes 32 bits
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for params, value in history:
        study.add_trial(optuna.trial.create_trial(params=params, distributions=SEARCH_SPACE, value=value))
    return study.ask(SEARCH_SPACE).params


def child_run_id(ref: RunRef, node: int, suite: str) -> str:
    return f"{ref.run_id}.n{node:03d}.{suite}"


@task(name="propose-agent", **STAGE_OPTIONS)
def propose_agent(ref: RunRef, node: int) -> EvolveConfig:
    """Node 0 is the initial agent (the run's evolve config); later nodes come from TPE."""
    store, config = store_for(ref.store_uri), run_config(ref)
    key = f"n{node:03d}"
    if store.has_part("candidates", ref.run_id, "sample", key):
        row = store.read_part("candidates", ref.run_id, "sample", key)[0]
        return EvolveConfig.model_validate_json(store.get_blob(row.candidate_id))
    if node == 0:
        agent, operator, parents = config.evolve, "initial", []
    else:
        nodes = sorted(store.read_rows("nodes", ref.run_id), key=lambda n: n.round)
        history = [(agent_params(_agent(store, n.node_id)), n.composite) for n in nodes]
        seen = {n.node_id for n in nodes}
        for attempt in range(8):
            agent = config.evolve.model_copy(update=tpe_proposal(history, seed_for(config.seed, "tpe", node, attempt)))
            if content_id(agent.model_dump_json()) not in seen:
                break
        else:
            raise RuntimeError(f"run {ref.run_id} node {node}: TPE proposed only already-evaluated agents")
        best = max(nodes, key=lambda n: (n.composite, -n.round))
        operator, parents = "tpe", [best.node_id]
    text = agent.model_dump_json()
    blob = store.put_blob(text.encode())
    store.write_part("candidates", ref.run_id, "sample", key, [CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=node, parent_ids=parents, operator=operator,
        proposer="optuna" if node else "initial", artifact_kind="config", artifact_uri=store.blob_uri(blob),
        island=0, summary=json.dumps(agent_params(agent), sort_keys=True),
    )])
    return agent


def _agent(store, node_id: str) -> EvolveConfig:
    return EvolveConfig.model_validate_json(store.get_blob(node_id))


def composites(summaries: Sequence[dict]) -> tuple[float, float]:
    """(hidden, public): mean over suites of the normalised holdout / select score of
    each child run's champion. A suite whose run registered nothing counts 0."""
    hidden = [s["holdout_normalized"] if s["holdout_normalized"] is not None else 0.0 for s in summaries]
    public = [s["select_normalized"] if s["select_normalized"] is not None else 0.0 for s in summaries]
    return fmean(hidden), fmean(public)


@task(name="gate-agent", **STAGE_OPTIONS)
def gate_agent(ref: RunRef, node: int, agent: EvolveConfig, summaries: list[dict]) -> bool:
    """Accept the agent only if its hidden composite beats the best so far; record the
    decision, the registry event (when accepted) and last the node, whose part marks
    the stage done. Idempotent."""
    store = store_for(ref.store_uri)
    key = f"n{node:03d}"
    if not store.has_part("nodes", ref.run_id, "gate", key):
        node_id = content_id(agent.model_dump_json())
        earlier = [n for n in store.read_rows("nodes", ref.run_id) if n.round < node]
        best = max((n.composite for n in earlier), default=float("-inf"))
        hidden, public = composites(summaries)
        accepted = hidden > best
        parent = store.read_part("candidates", ref.run_id, "sample", key)[0].parent_ids
        outcome = GateOutcome(
            decision="accept" if accepted else "reject",
            reason=f"hidden composite {hidden:.6f} {'>' if accepted else '<='} best so far {best:.6f}",
            improved_cases=[], regressed_cases=[], select_score=public, baseline_score=None if not earlier else best,
            delta=None if not earlier else hidden - best, ci_low=None, ci_high=None, n_cases=len(summaries),
            evidence_json=json.dumps(summaries, sort_keys=True, default=str))
        scorer = json.loads(store.read_part("runs", ref.run_id, "status", "running")[0].config_json)["scorer_version"]
        store.write_part("gate_decisions", ref.run_id, "gate", key, [decision_row(
            ref, node, node_id, "composite_best_so_far", None, outcome, id_parts=(node_id, "composite"),
            scorer_version=scorer)])
        if accepted:
            store.write_part("registry", ref.run_id, "register", key, [RegistryRow(
                run_id=ref.run_id, name="aide2/agent", version=sum(n.accepted for n in earlier) + 1,
                candidate_id=node_id, stage="stable", alias="champion",
                decision_id=derived_id(ref.run_id, node_id, "composite"), select_score=public,
                holdout_score=hidden, event_at=datetime.now(timezone.utc),
            )])
        store.write_part("nodes", ref.run_id, "gate", key, [NodeRow(
            run_id=ref.run_id, node_id=node_id, parent_id=parent[0] if parent else None, round=node,
            diff=json.dumps(agent_params(agent), sort_keys=True), accepted=accepted, composite=hidden,
            public_composite=public, best_so_far=max(best, hidden),
            child_run_ids=[s["run_id"] for s in summaries],
        )])
    return store.read_part("nodes", ref.run_id, "gate", key)[0].accepted
