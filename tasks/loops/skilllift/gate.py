"""Stage tasks of the skilllift loop, second half: choose (the gate: the champion by
real results, the old champion its baseline), register (an accepted skill is the next
champion version, its holdout measured; MLflow logs the decision) and recalibrate
(distill: the rubric's items extended from the executed skills' failed events and its
weights refit over every skill executed so far; a new ``skilllift_rubrics`` version).
Choose and register run in one transaction in the flow: a failed register un-publishes
the round's decision."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from prefect import task

from schemas.ids import seed_for
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate import rows as gate_rows
from tasks.gate.stage import CHAMPION, registry_name
from tasks.harness_loops.episodes import harness_document
from tasks.harness_loops.tracking import track_candidate
from tasks.loops.skilllift.calibrate import agreement, executed_features, refit
from tasks.loops.skilllift.decide import GATE, SEED_GATE, decide, seed_outcome
from tasks.loops.skilllift.rubric import extend_rubric, rubric_json, rubric_score
from tasks.loops.skilllift.stages import (
    CALIBRATION,
    COST,
    RUBRICS,
    SKILLS,
    champion_id,
    current_rubric,
    real_cases,
    real_tag,
    round_key,
    traces_of,
)
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import distillate, distilled, once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score


def success_by_case(ref: RunRef, candidate_id: str) -> dict[str, float]:
    return {case: m["success"] for case, m in real_cases(ref, candidate_id).items()}


def decision_row(ref: RunRef, round_index: int, candidates: list[str]) -> GateDecisionRow:
    champion = champion_id(ref)
    if champion is None:
        (seed,) = candidates
        outcome, chosen, gate, baseline = seed_outcome(success_by_case(ref, seed)), seed, SEED_GATE, None
    else:
        _, rubric = current_rubric(ref)
        executed = [champion, *candidates]
        real = {c: success_by_case(ref, c) for c in executed}
        rubric_scores = {c: rubric_score(rubric, harness_document(ref, c)) for c in executed}
        corr = agreement([sum(real[c].values()) / len(real[c]) for c in executed], [rubric_scores[c] for c in executed],
                         seed=seed_for(run_config(ref).seed, "skilllift", "corr", round_index))
        chosen, outcome = decide(real, rubric_scores, champion, corr, run_config(ref).skilllift.min_delta,
                                 seed=seed_for(run_config(ref).seed, "skilllift", "gate", round_index))
        gate, baseline = GATE, champion
    return gate_rows.decision_row(ref, round_index, chosen, gate, baseline, outcome)


@task(name="choose", **STAGE_OPTIONS)
def choose(ref: RunRef, round_index: int, candidates: list[str]) -> str:
    """gate: the best executed skill by real select success against the champion (round
    0: the initial skill is admitted); publishes one decision and returns it."""
    key = round_key(round_index)
    remember_decision_part(ref, "choose", key)
    rows = once(ref, "gate_decisions", "choose", key, lambda: [decision_row(ref, round_index, candidates)])
    return rows[0].decision


choose.on_rollback(undo_decision_part)


@task(name="register", **STAGE_OPTIONS)
def register(ref: RunRef, round_index: int) -> bool:
    """register: an accepted skill becomes the next champion version (holdout measured:
    the only place holdout is run); the old champion stays in the registry."""
    store, key, name = store_for(ref.store_uri), round_key(round_index), registry_name(run_config(ref))
    decision = store.read_part("gate_decisions", ref.run_id, "choose", key)[0]
    accepted = decision.decision == "accept"

    def rows() -> list[RegistryRow]:
        earlier = [r for r in store.read_rows("registry", ref.run_id) if r.name == name]
        return [RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1, candidate_id=decision.candidate_id,
                            stage="stable", alias=CHAMPION, decision_id=decision.decision_id,
                            select_score=decision.select_score, holdout_score=holdout_score(ref, decision.candidate_id),
                            event_at=datetime.now(timezone.utc))] if accepted else []

    registered = once(ref, "registry", "register", key, rows)
    track_candidate(ref, decision, registered[0] if registered else None)
    reporter().advance(0, f"round {round_index}: {decision.decision}")
    return accepted


@task(name="recalibrate", **STAGE_OPTIONS)
def recalibrate(ref: RunRef, round_index: int, candidates: list[str]) -> int:
    """distill: new items from the failed events of this round's executed skills, then
    the weights refit (``skilllift.calibrate``) over every skill executed so far;
    publishes rubric version ``round_index`` and returns it."""
    config = run_config(ref)

    def rows():
        _, rubric = current_rubric(ref)
        traces = [t for c in candidates for t in traces_of(ref, real_tag(c), c)]
        extended = extend_rubric(rubric, traces)
        executed = sorted({r["id"] for r in distilled(ref, SKILLS) if r["executed"]})
        documents = {c: harness_document(ref, c) for c in executed}
        real = {c: sum(success_by_case(ref, c).values()) / max(len(success_by_case(ref, c)), 1) for c in executed}
        features, scores = executed_features(extended, documents, real)
        fitted = refit(extended, features, scores, config.skilllift.calibrate, config.skilllift.l2)
        return [distillate(ref, RUBRICS, round_index, {"ver": round_index, "round": round_index,
                                                "items_json": rubric_json(fitted), "method": config.skilllift.calibrate,
                                                "fitted_on": len(executed)})]

    published = once(ref, "distillates", "recalibrate", round_key(round_index), rows)
    return json.loads(published[0].content)["ver"]


@task(name="summarize")
def skilllift_summary(ref: RunRef) -> dict[str, object]:
    """Initial vs final champion (select and holdout), decisions, rank agreement per round, cost."""
    store = store_for(ref.store_uri)
    registry = sorted(store.read_rows("registry", ref.run_id), key=lambda r: r.version)
    decisions = [d for d in store.read_rows("gate_decisions", ref.run_id) if d.gate == GATE]
    cost = distilled(ref, COST)
    first, last = (registry[0], registry[-1]) if registry else (None, None)
    return {
        "run_id": ref.run_id, "suite": "toolsim", "metric": "success",
        "candidate_id": last.candidate_id if last else None,
        "seed_select_success": first.select_score if first else None, "select_success": last.select_score if last else None,
        "seed_holdout_success": first.holdout_score if first else None, "holdout_score": last.holdout_score if last else None,
        "accepted": sum(d.decision == "accept" for d in decisions), "rejected": sum(d.decision == "reject" for d in decisions),
        "rank_corr": [c["rank_corr"] for c in distilled(ref, CALIBRATION)],
        "real_episodes": sum(c["real_episodes"] for c in cost), "oracle_tokens": sum(c["oracle_tokens"] for c in cost),
        "rubric_checks": sum(c["rubric_checks"] for c in cost),
    }
