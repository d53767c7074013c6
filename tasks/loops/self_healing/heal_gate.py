"""Stage tasks of the self_healing loop, second half: replay (run the candidate on the
cases the gate will weigh), validate (the paired-replay gate) and register (accepted
rules become the champion harness and are active; rejected rules are retired).

Validate and register run in one transaction: a failed register un-publishes the
round's decision. BEFORE is the champion's recorded execution of the same case: the
same payload carries the same noise seed, so before and after are paired (an execution
id is (run, candidate, case, seed): the champion is never re-run on a case).

A rule's distillate rows are events with one id (the candidate's): "proposed" when
healed, then "active" or "retired" when registered (or retired later by the library
guard, ``tasks/loops/self_healing/heal_guard.py``); the latest status holds. Every round's candidate is
logged to the tracker (MLflow) with its decision; re-logging on resume adds nothing."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from prefect import task

from schemas.ids import seed_for
from schemas.rows import DistillateRow, GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stage import CHAMPION, registry_name
from tasks.harness_loops.documents import proposal_of
from tasks.harness_loops.metrics import case_metrics, success_rate
from tasks.harness_loops.tracking import track_candidate
from tasks.loops.self_healing.heal import champion_id, evaluate, evaluate_on_train, replay_tag, round_key
from tasks.loops.self_healing.heal_logic import (
    ACCEPT_ALL,
    ADMITTING_GATES,
    GATE,
    GUARD,
    accept_all,
    decide,
    replay_plan,
)
from tasks.runtime.context import (
    RunRef,
    anchored_scorer_version,
    cases_by_split,
    run_config,
    run_suite,
    store_for,
)
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score
from tasks.stages.score import blob_id

SEED_GATE = "seed"


def _rule_row(ref: RunRef, round_index: int) -> DistillateRow:
    return store_for(ref.store_uri).read_part("distillates", ref.run_id, "heal", round_key(round_index))[0]


def plan_for(ref: RunRef, round_index: int, candidate: str, champion: str):
    """The round's (triggers, protected, follow-up) cases: a pure function of stored rows."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    proposal = proposal_of(store.get_blob(blob_id(_rule_row(ref, round_index).uri)))
    champion_train = case_metrics(store.read_rows("scores", ref.run_id), champion, ("train",))
    select_ids = [c.case_id for c in cases_by_split(suite, "select")]
    return replay_plan(proposal.triggers, champion_train, select_ids, salt=candidate)


@task(name="replay", **STAGE_OPTIONS)
def replay(ref: RunRef, round_index: int, candidate: str, champion: str) -> list[str]:
    """Execute: run the candidate (its rule active) on the replay cases; returns them."""
    triggers, protected, followup = plan_for(ref, round_index, candidate, champion)
    wanted = {*triggers, *protected, *followup}
    cases = [c for c in run_suite(ref).cases() if c.case_id in wanted]
    evaluate(ref, replay_tag(candidate), candidate, cases)
    return sorted(wanted)


def seed_outcome(ref: RunRef, candidate: str) -> GateOutcome:
    train = case_metrics(store_for(ref.store_uri).read_rows("scores", ref.run_id), candidate, ("train",))
    evidence = json.dumps({"gate": SEED_GATE, "train_success": success_rate(train)}, sort_keys=True)
    return GateOutcome("accept", "no champion yet: the seed harness becomes the first champion", [], [],
                       success_rate(train), None, None, None, None, len(train), evidence)


def replay_outcome(ref: RunRef, round_index: int, candidate: str, champion: str) -> GateOutcome:
    plan = plan_for(ref, round_index, candidate, champion)
    scores = store_for(ref.store_uri).read_rows("scores", ref.run_id)
    before = case_metrics(scores, champion, ("train",))
    after = case_metrics(scores, candidate, ("train", "select"))
    weighed = {*plan[0], *plan[1], *plan[2]}
    versions = {s.scorer_version for s in scores if s.candidate_id in (candidate, champion) and s.case_id in weighed}
    config = run_config(ref)
    return decide(plan, before, after, scorer_versions=versions, anchored=anchored_scorer_version(ref),
                  salt=candidate, seed=seed_for(config.seed, "gate", candidate))


@task(name="validate", **STAGE_OPTIONS)
def validate(ref: RunRef, round_index: int, candidate: str) -> str:
    """Validate: gate the candidate against the champion (the seed: admitted as the
    first champion); publishes one decision and returns it."""
    key = round_key(round_index)
    remember_decision_part(ref, "validate", key)
    return once(ref, "gate_decisions", "validate", key, lambda: [validation_row(ref, round_index, candidate)])[0].decision


def validation_row(ref: RunRef, round_index: int, candidate: str) -> GateDecisionRow:
    """The round's decision: the seed's admission, the paired replay's verdict, or (the
    accept-all ablation) an acceptance whatever the replay said."""
    champion, ablation = champion_id(ref), run_config(ref).heal.accept_all
    outcome = seed_outcome(ref, candidate) if champion is None else replay_outcome(ref, round_index, candidate, champion)
    gate = SEED_GATE if champion is None else ACCEPT_ALL if ablation else GATE
    outcome = accept_all(outcome) if gate == ACCEPT_ALL else outcome
    return decision_row(ref, round_index, candidate, gate, champion, outcome, id_parts=(candidate, gate))


validate.on_rollback(undo_decision_part)  # a failed register un-publishes the decision; a resume re-decides


def registry_row(ref: RunRef, decision: GateDecisionRow) -> RegistryRow:
    """The decision's candidate as the next champion version (train runs completed,
    holdout measured: the only place holdout is ever run). Its select score is its
    success over every train case, the champion's own selection evidence, so versions
    (and runs continuing from one another) compare on the same cases; the decision's
    select score covers only the cases its replay weighed."""
    store, name = store_for(ref.store_uri), registry_name(run_config(ref))
    earlier = [r for r in store.read_rows("registry", ref.run_id) if r.name == name]
    evaluate_on_train(ref, decision.candidate_id)
    train = case_metrics(store.read_rows("scores", ref.run_id), decision.candidate_id, ("train",))
    return RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1, candidate_id=decision.candidate_id,
                       stage="stable", alias=CHAMPION, decision_id=decision.decision_id,
                       select_score=success_rate(train), holdout_score=holdout_score(ref, decision.candidate_id),
                       event_at=datetime.now(timezone.utc))


@task(name="register_rule", **STAGE_OPTIONS)
def register_rule(ref: RunRef, round_index: int) -> bool:
    """Register: an accepted harness becomes the champion (its train runs completed,
    its holdout measured) and its rule active; a rejected rule is retired."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    decision = store.read_part("gate_decisions", ref.run_id, "validate", key)[0]
    accepted = decision.decision == "accept"
    if round_index > 0:
        status = "active" if accepted else "retired"
        once(ref, "distillates", "register", key,
             lambda: [_rule_row(ref, round_index).model_copy(update={"status": status})])
    registered = once(ref, "registry", "register", key, lambda: [registry_row(ref, decision)] if accepted else [])
    track_candidate(ref, decision, registered[0] if registered else None)
    reporter().advance(1 if round_index else 0, f"round {round_index}: {decision.decision}")
    return accepted


@task(name="summarize")
def heal_summary(ref: RunRef) -> dict[str, object]:
    """Seed vs final champion: train success and holdout success; decisions made."""
    store = store_for(ref.store_uri)
    registry = sorted(store.read_rows("registry", ref.run_id), key=lambda r: r.version)
    scores = store.read_rows("scores", ref.run_id)
    every = store.read_rows("gate_decisions", ref.run_id)
    decisions = [d for d in every if d.gate in ADMITTING_GATES]
    seed, best = (registry[0], registry[-1]) if registry else (None, None)

    def train(row: RegistryRow | None) -> float | None:
        return success_rate(case_metrics(scores, row.candidate_id, ("train",))) if row else None

    return {
        "run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success",
        "candidate_id": best.candidate_id if best else None,
        "seed_train_success": train(seed), "train_success": train(best),
        "seed_holdout_success": seed.holdout_score if seed else None,
        "holdout_score": best.holdout_score if best else None,
        "accepted_rules": sum(d.decision == "accept" for d in decisions),
        "rejected_rules": sum(d.decision == "reject" for d in decisions),
        "guard_retired": sum(d.gate == GUARD and d.decision == "reject" for d in every),
        "candidates": len(store.read_rows("candidates", ref.run_id)),
    }
