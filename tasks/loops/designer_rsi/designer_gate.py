"""Stage tasks of the designer_rsi loop, second half: replay (candidate and champion on
the same cases, same noise), gate (Designer-RSI's paired replay: no regression and at
least one improvement), publish (register the library or keep the gap record open),
and the final test of the seed and the last library.

Gate and publish run in one transaction: a failed publish un-publishes the round's
decision. Every decision is a ``gate_decisions`` row whose ``evidence_json`` names the
pool (expand / deepen), the record's signature, and every replayed case's before and
after, so "which gaps were rejected, and on which old success did they regress" is SQL.

Statuses: a written edit's ``skill`` distillate goes proposed -> published | rejected;
its pool record goes open -> published when admitted (a rejected record stays open)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

from prefect import task

from schemas.ids import seed_for
from schemas.rows import DistillateRow, GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, no_evidence
from tasks.gate.paired_replay import designer_rsi_rule, paired_replay_gate
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stage import CHAMPION, current_champion, registry_name
from tasks.harness_loops.episodes import harness_document
from tasks.harness_loops.metrics import PRIMARY, case_metrics, success_rate
from tasks.harness_loops.tracking import track_candidate
from tasks.loops.designer_rsi.designer import (
    SKILL_KIND,
    cases_named,
    champion_at,
    pool_state,
    record_row,
    round_key,
    run_missing,
)
from tasks.loops.designer_rsi.designer_logic import PUBLISHED, replay_evidence
from tasks.runtime.context import RunRef, anchored_scorer_version, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score

GATE = "designer_rsi_replay"
SEED_GATE = "seed"
RULE = replace(designer_rsi_rule(PRIMARY), lower_is_better=("cost",))
"""The paper's rule over success, progress and cost (cost improves downwards)."""


def skill_row(ref: RunRef, round_index: int) -> DistillateRow:
    return store_for(ref.store_uri).read_part("distillates", ref.run_id, "design", round_key(round_index))[0]


def replay_plan(ref: RunRef, round_index: int) -> tuple[list[str], list[str]]:
    plan = json.loads(skill_row(ref, round_index).content)["replay"]
    return plan["targets"], plan["successes"]


@task(name="replay_skill", **STAGE_OPTIONS)
def replay_skill(ref: RunRef, round_index: int, candidate: str, champion: str) -> list[str]:
    """execute: the candidate and the champion on the round's replay cases (the champion
    only where it has no run yet; the payload fixes the noise, so both are paired)."""
    targets, olds = replay_plan(ref, round_index)
    cases = cases_named(ref, [*targets, *olds])
    run_missing(ref, f"replay-{round_key(round_index)}", champion, cases)
    run_missing(ref, f"replay-{round_key(round_index)}", candidate, cases)
    return sorted(c.case_id for c in cases)


def replay_outcome(ref: RunRef, round_index: int, candidate: str, champion: str) -> GateOutcome:
    targets, olds = replay_plan(ref, round_index)
    scores = store_for(ref.store_uri).read_rows("scores", ref.run_id)
    before, after = case_metrics(scores, champion, ("train",)), case_metrics(scores, candidate, ("train",))
    weighed = {*targets, *olds}
    versions = {s.scorer_version for s in scores if s.candidate_id in (candidate, champion) and s.case_id in weighed}
    outcome = paired_replay_gate(replay_evidence(targets, olds, before, after), RULE, scorer_versions=versions,
                                 anchored=anchored_scorer_version(ref), salt=candidate,
                                 seed=seed_for(run_config(ref).seed, "gate", candidate))
    skill = json.loads(skill_row(ref, round_index).content)
    evidence = {**json.loads(outcome.evidence_json), "pool": skill["pool"], "signature": skill["signature"],
                "record_id": skill["record_id"], "operator": skill["operator"]}
    return GateOutcome(**{**vars(outcome), "evidence_json": dump_evidence(evidence)})


def _decision_row(ref: RunRef, round_index: int, candidate: str, champion: str | None,
                  outcome: GateOutcome) -> GateDecisionRow:
    gate = GATE if champion else SEED_GATE
    return decision_row(ref, round_index, candidate, gate, champion, outcome, id_parts=(candidate, gate))


@task(name="gate_skill", **STAGE_OPTIONS)
def gate_skill(ref: RunRef, round_index: int, candidate: str) -> str:
    """gate: the seed is admitted as the first library; any later edit must pass the
    paired replay against the champion. Publishes one decision and returns it."""
    key = round_key(round_index)
    remember_decision_part(ref, "gate", key)
    return once(ref, "gate_decisions", "gate", key, lambda: [skill_decision(ref, round_index, candidate)])[0].decision


def skill_decision(ref: RunRef, round_index: int, candidate: str) -> GateDecisionRow:
    """The seed's admission as the first library, or the paired replay's verdict."""
    champion = champion_at(ref, round_index)
    if champion is None:
        reason = "accept: no library yet: the seed harness (default plans only) becomes the first champion"
        outcome = no_evidence("accept", reason, {"gate": SEED_GATE})
    else:
        outcome = replay_outcome(ref, round_index, candidate, champion)
    return _decision_row(ref, round_index, candidate, champion, outcome)


gate_skill.on_rollback(undo_decision_part)  # a failed publish un-publishes the decision; a resume re-decides


def _registry_row(ref: RunRef, decision: GateDecisionRow) -> RegistryRow:
    name = registry_name(run_config(ref))
    earlier = [r for r in store_for(ref.store_uri).read_rows("registry", ref.run_id) if r.name == name]
    return RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1, candidate_id=decision.candidate_id,
                       stage="stable", alias=CHAMPION, decision_id=decision.decision_id,
                       select_score=decision.select_score, holdout_score=holdout_score(ref, decision.candidate_id),
                       event_at=datetime.now(timezone.utc))


def _status_rows(ref: RunRef, round_index: int, accepted: bool) -> list[DistillateRow]:
    """The skill's status event and, when published, its pool record's."""
    skill = skill_row(ref, round_index)
    rows = [skill.model_copy(update={"status": "published" if accepted else "rejected"})]
    if accepted:
        signature = json.loads(skill.content)["signature"]
        record = pool_state(ref)[signature]
        rows.append(record_row(ref, round_index, replace(record, status=PUBLISHED)))
    return rows


@task(name="publish_skill", **STAGE_OPTIONS)
def publish_skill(ref: RunRef, round_index: int) -> bool:
    """register: an admitted library becomes the champion (holdout measured) and its
    skill and gap record are published; a rejected skill is not (its record stays open).
    Either way the candidate is logged to MLflow with its decision."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    decision = store.read_part("gate_decisions", ref.run_id, "gate", key)[0]
    accepted = decision.decision == "accept"
    if round_index > 0:
        once(ref, "distillates", "register", key, lambda: _status_rows(ref, round_index, accepted))
    registered = once(ref, "registry", "register", key, lambda: [_registry_row(ref, decision)] if accepted else [])
    track_candidate(ref, decision, registered[0] if registered else None)
    if round_index == 0:
        reporter().advance(1, "seed library admitted")
    return accepted


@task(name="final_test", **STAGE_OPTIONS)
def final_test(ref: RunRef) -> None:
    """The seed and the last champion on the test split (for the end-of-run report;
    no decision reads these scores)."""
    registry = sorted(store_for(ref.store_uri).read_rows("registry", ref.run_id), key=lambda r: r.version)
    cases = cases_by_split(run_suite(ref), "test")
    for row in {registry[0].candidate_id: registry[0], registry[-1].candidate_id: registry[-1]}.values():
        run_missing(ref, "test", row.candidate_id, cases)


def library_size(document: dict) -> int:
    return len(document.get("rules", [])) + len(document.get("skills", []))


@task(name="summarize")
def designer_summary(ref: RunRef) -> dict[str, object]:
    """Seed vs final library: test and holdout success; edits published / rejected by pool."""
    store = store_for(ref.store_uri)
    held = current_champion(store.read_rows("registry", ref.run_id), registry_name(run_config(ref)))
    registry = sorted(store.read_rows("registry", ref.run_id), key=lambda r: r.version)
    scores = store.read_rows("scores", ref.run_id)
    skills = [d for d in store.read_rows("distillates", ref.run_id) if d.kind == SKILL_KIND]

    def count(pool: str, status: str) -> int:
        return sum(d.status == status and json.loads(d.content)["pool"] == pool for d in skills)

    return {
        "run_id": ref.run_id, "suite": run_suite(ref).name, "metric": PRIMARY, "mode": run_config(ref).designer.mode,
        "candidate_id": held.candidate_id if held else None,
        "seed_test_success": success_rate(case_metrics(scores, registry[0].candidate_id, ("test",))),
        "test_success": success_rate(case_metrics(scores, held.candidate_id, ("test",))) if held else None,
        "seed_holdout_success": registry[0].holdout_score, "holdout_score": held.holdout_score if held else None,
        "published": {p: count(p, "published") for p in ("expand", "deepen")},
        "rejected": {p: count(p, "rejected") for p in ("expand", "deepen")},
        "library_size": library_size(harness_document(ref, held.candidate_id)) if held else 0,
    }
