"""codemidas' stages at their Prefect boundaries. Each publishes its parts once
(`tasks.runtime.parts.once`) and reads what it published, so a retry or `ratchet resume`
continues where it stopped: the construction of each candidate is its own part.

The loop's tables are distillate kinds (one JSON row each; README "codemidas"):
`codemidas_candidate` (cand_id, repo, lang, domain, symbol, stage_reached, drop_reason),
`codemidas_check` (cand_id, split, hollow_fails, ref_passes, trivial_killed, mutation
score), `codemidas_attempt` (cand_id, attempt, solver, passed, leak_found,
reviewer_verdict, select/held-out pass), `codemidas_task` (task_id, cand_id, split).
Every environment's gate row (`codemidas_env`) carries the evidence; the environment set
of each round is a candidate (its sha256), the last one registered."""

from __future__ import annotations

import json
import random
from typing import Any

from prefect import task

from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow, GateDecisionRow
from suites.codemidas.ship import SOURCES, pool
from suites.executors import make_executor
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.loops.codemidas.construct import construct
from tasks.loops.codemidas.envset import EMPTY, dump, merged, next_candidates, set_id
from tasks.proposers.test_inputs import llm_arguments
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import run_start

KINDS = {"candidate": "codemidas_candidate", "check": "codemidas_check", "attempt": "codemidas_attempt",
         "task": "codemidas_task"}
GATE = "codemidas_env"
ARTIFACT = "environment_set"


def section(ref: RunRef):
    return run_config(ref).codemidas


def candidate_pool(ref: RunRef) -> list[str]:
    """The installed-source pool (`suites.codemidas.ship.SOURCES`, restricted to
    `codemidas.modules` when set)."""
    modules = section(ref).modules
    return pool({m: names for m, names in SOURCES.items() if not modules or m in modules})


@task(name="start", **STAGE_OPTIONS)
def starting_set(ref: RunRef) -> dict[str, Any]:
    """The environment set the run continues from: the champion's (start_from=champion),
    else the empty set."""
    start = run_start(ref)
    return json.loads(store_for(ref.store_uri).get_blob(start.candidate_id)) if start else dict(EMPTY)


def sample(ref: RunRef, envset: dict[str, Any]) -> list[str]:
    """sample: the next `per_round` candidate functions of the pool not built yet."""
    return next_candidates(candidate_pool(ref), envset["seen"], section(ref).per_round)


def _row(ref: RunRef, r: int, kind: str, key: tuple, body: dict) -> DistillateRow:
    return DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, kind, *key), round=r, kind=kind,
                         content=json.dumps(body, sort_keys=True), uri=None, source_execution_ids=[], support=1,
                         status="active")


def extra_inputs(ref: RunRef, candidate: str):
    """The llm path's input writer for one candidate (None: the fuzzer alone)."""
    config = run_config(ref)
    if config.proposer != "llm":
        return None
    rng = random.Random(seed_for(config.seed, "codemidas-llm", candidate))
    return lambda built: llm_arguments(built.spec, built.kinds, section(ref).llm_inputs, config.evolve, rng)[:2]


@task(name="construct", **STAGE_OPTIONS)
def construct_round(ref: RunRef, r: int, candidates: list[str]) -> list[dict[str, Any]]:
    """sample (hollow, spec, tests) + gate 1 + execute (attempts) per candidate, in the
    sandbox: one part per candidate. Returns each candidate's row (with its evidence and,
    kept, its environment's blob)."""
    config, store, s = run_config(ref), store_for(ref.store_uri), section(ref)
    executor = make_executor(config.sandbox)
    out = []
    for cid in candidates:
        def rows(cid=cid) -> list[DistillateRow]:
            found = construct(executor, cid, config.seed, s.n_tests, s.site_mutants, s.drop_leaky,
                              extra_inputs(ref, cid))
            env = found["environment"]
            blob = store.put_blob(dump(env).encode()) if env else None
            head = {**found["candidate"], "evidence": found["evidence"], "environment_blob": blob}
            return ([_row(ref, r, KINDS["candidate"], (cid,), head)]
                    + [_row(ref, r, KINDS["check"], (cid, c["split"]), c) for c in found["checks"]]
                    + [_row(ref, r, KINDS["attempt"], (cid, a["attempt"]), a) for a in found["attempts"]])
        published = once(ref, "distillates", "construct", f"r{r:04d}-{derived_id(cid)[:16]}", rows)
        out.append(json.loads(next(d for d in published if d.kind == KINDS["candidate"]).content))
    return out


def gate_row(ref: RunRef, r: int, c: dict[str, Any], version: str) -> GateDecisionRow:
    """One environment's admission row: accepted when it reached `kept`; its evidence is
    the construction's (gate 1 on the select tests, every attempt's reward)."""
    gate1 = c["evidence"].get("gate1_select") or {}
    outcome = GateOutcome(
        decision="accept" if c["stage_reached"] == "kept" else "reject",
        reason=f"{c['cand_id']}: " + (c["drop_reason"] or f"kept: reliable on the select tests, attempts' rewards spread "
                                   f"(mutation score {gate1.get('mutation_score', 0):.3f})"),
        improved_cases=[], regressed_cases=[], select_score=gate1.get("mutation_score"), baseline_score=None,
        delta=None, ci_low=None, ci_high=None, n_cases=c["tests"],
        evidence_json=json.dumps({"cand_id": c["cand_id"], **c["evidence"]}, sort_keys=True))
    return decision_row(ref, r, c["environment_blob"] or content_id(c["cand_id"]), GATE, None, outcome,
                        id_parts=(c["cand_id"], GATE), scorer_version=version)


@task(name="gate", **STAGE_OPTIONS)
def gate_round(ref: RunRef, r: int, built: list[dict[str, Any]]) -> list[str]:
    """gate: one decision per environment; returns the accepted environments' blobs."""
    version = run_suite(ref).scorer_version()
    rows = once(ref, "gate_decisions", "gate", f"r{r:04d}", lambda: [gate_row(ref, r, c, version) for c in built])
    return [d.candidate_id for d in rows if d.decision == "accept"]


@task(name="register", **STAGE_OPTIONS)
def extend_set(ref: RunRef, r: int, envset: dict[str, Any], built: list[dict[str, Any]]) -> dict[str, Any]:
    """distill + register the round: the set with this round's accepted environments (a
    candidate whose id is its content's sha256; parent: the previous set) and one
    `codemidas_task` row per accepted environment."""
    store = store_for(ref.store_uri)
    kept = [c for c in built if c["stage_reached"] == "kept"]
    accepted = [{**json.loads(store.get_blob(c["environment_blob"])), "holdout_holds": c["evidence"]["holdout_holds"],
                 "select_mutation_score": c["evidence"]["gate1_select"]["mutation_score"]} for c in kept]
    new = merged(envset, accepted, [c["cand_id"] for c in built])
    sid = store.put_blob(dump(new).encode())
    once(ref, "candidates", "register", f"r{r:04d}", lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=sid, round=r, parent_ids=[set_id(envset)], operator="construct",
        proposer=run_config(ref).proposer, artifact_kind=ARTIFACT, artifact_uri=store.blob_uri(sid), island=-1,
        summary=f"{len(new['environments'])} environments (+{len(kept)} of {len(built)} built this round)")])
    once(ref, "distillates", "tasks", f"r{r:04d}", lambda: [
        _row(ref, r, KINDS["task"], (c["cand_id"],), {"task_id": c["environment_blob"], "cand_id": c["cand_id"],
                                                       "split": "train"}) for c in kept])
    return new
