"""algoevo's gate and register stages: after a source task, the patterns (operator
families) its cards and the earlier source tasks' cards support; a pattern enters the
design skill only with a positive mean Δ on at least `min_tasks` distinct tasks (one
`algoevo_promotion` gate decision per pattern not yet in the skill, its evidence the
supporting tasks and their mean Δ); a changed skill is a new `skills` candidate (content
id) and the champion of `<suite>/algoevo-skill`; each task's best program is registered
as `<task>/algoevo-best` with its held-out score, and its `ae_task_runs` row written."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.algoevo import AECardRow, AEPatternRow, AETaskRunRow
from schemas.ids import derived_id
from schemas.rows import CandidateRow, GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row as gate_row
from tasks.loops.algoevo.logic import Card, Pattern, patterns, skill_document
from tasks.loops.algoevo.stages import evaluate, section, task_at
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS

GATE = "algoevo_promotion"


def card_of(row: AECardRow) -> Card:
    cond = json.loads(row.conditions)
    return Card(task_id=row.task_id, eval_idx=row.eval_idx, node=row.node, parent=row.parent, family=row.family,
                params=json.loads(row.modification)["params"], before=row.before, after=row.after,
                valid=row.delta is not None, parent_depth=cond["parent_depth"], parent_visits=cond["parent_visits"],
                ucb=cond["ucb"], prior_weight=cond["prior_weight"], skill_ver=cond["skill_ver"])


def source_cards(ref: RunRef, upto: int) -> list[Card]:
    """The cards of the source tasks at positions <= `upto`."""
    rows = store_for(ref.store_uri).read_rows("ae_cards", ref.run_id)
    return [card_of(r) for r in sorted(rows, key=lambda r: (r.position, r.eval_idx)) if r.position <= upto]


def skill_of(ref: RunRef, skill_id: str) -> dict:
    return json.loads(store_for(ref.store_uri).get_blob(skill_id).decode())


def decision_row(ref: RunRef, position: int, p: Pattern, new_id: str, old_id: str, min_tasks: int) -> GateDecisionRow:
    negative = sorted(t for t, v in p.effects.items() if v <= 0)
    evidence = {"family": p.family, "support_task_ids": list(p.support), "task_mean_delta": p.effects,
                "min_tasks": min_tasks, "desc": p.desc}
    outcome = GateOutcome(
        decision="accept" if p.promoted else "reject",
        reason=(f"{p.family}: positive mean delta on {len(p.support)} distinct task(s) "
                f"({', '.join(p.support) or 'none'}); promotion needs {min_tasks}"),
        improved_cases=list(p.support), regressed_cases=negative, select_score=None, baseline_score=None,
        delta=fmean(p.effects.values()), ci_low=None, ci_high=None, n_cases=len(p.effects),
        evidence_json=json.dumps(evidence, sort_keys=True))
    return gate_row(ref, position, new_id, GATE, old_id, outcome, id_parts=(position, p.family, GATE))


@task(name="gate", **STAGE_OPTIONS)
def gate_patterns(ref: RunRef, position: int, skill_id: str) -> str:
    """gate: the patterns of the source tasks so far; those with enough distinct
    supporting tasks are promoted. Returns the skill the next task loads (a new
    version only when the promoted set changed)."""
    s, store = section(ref), store_for(ref.store_uri)
    tasks = run_config(ref).algoevo.tasks[: position + 1]
    found = patterns(source_cards(ref, position), s.min_tasks, s.min_cards, s.delta == "centred")
    old = skill_of(ref, skill_id)
    promoted = sorted(set(old["promoted_patterns"]) | {p.family for p in found if p.promoted})
    new_id = skill_id
    if promoted != old["promoted_patterns"]:
        body = json.dumps(skill_document(tasks, promoted, s.boost, skill_id), sort_keys=True)
        sid = store.put_blob(body.encode())
        new_id = once(ref, "candidates", "gate", f"t{position:02d}-skill", lambda: [CandidateRow(
            run_id=ref.run_id, candidate_id=sid, round=position, parent_ids=[skill_id], operator="promote",
            proposer="algoevo", artifact_kind="skills", artifact_uri=store.blob_uri(sid), island=-1,
            summary=f"promoted patterns: {', '.join(promoted)}")])[0].candidate_id
    once(ref, "ae_patterns", "gate", f"t{position:02d}", lambda: [AEPatternRow(
        run_id=ref.run_id, id=derived_id(ref.run_id, "pattern", p.family), desc=p.desc, family=p.family,
        after_task=position, support_task_ids=list(p.support), effects=json.dumps(p.effects, sort_keys=True),
        promoted=p.family in promoted, skill_ver=new_id) for p in found])
    once(ref, "gate_decisions", "gate", f"t{position:02d}", lambda: [
        decision_row(ref, position, p, new_id, skill_id, s.min_tasks)
        for p in found if p.family not in old["promoted_patterns"]])
    return new_id


def skill_name(ref: RunRef) -> str:
    return f"{run_config(ref).suite}/algoevo-skill"


def registry_row(ref: RunRef, name: str, candidate_id: str, decision_id: str, holdout: float | None,
                 select: float | None) -> RegistryRow:
    version = 1 + sum(r.name == name for r in store_for(ref.store_uri).read_rows("registry", ref.run_id))
    return RegistryRow(run_id=ref.run_id, name=name, version=version, candidate_id=candidate_id, stage="stable",
                       alias="champion", decision_id=decision_id, select_score=select, holdout_score=holdout,
                       event_at=datetime.now(timezone.utc))


@task(name="register", **STAGE_OPTIONS)
def register_skill(ref: RunRef, position: int, skill_id: str, previous_id: str) -> str:
    """register: the skill the next task loads; a new version becomes the champion of
    `<suite>/algoevo-skill` (the initial skill is version 1, position -1)."""
    if skill_id == previous_id and position >= 0:
        return skill_id
    accepted = [d.decision_id for d in store_for(ref.store_uri).read_rows("gate_decisions", ref.run_id)
                if d.gate == GATE and d.round == position and d.decision == "accept"]
    once(ref, "registry", "register", f"skill-t{position:02d}", lambda: [registry_row(
        ref, skill_name(ref), skill_id, accepted[0] if accepted else "", None, None)])
    return skill_id


@task(name="register-best", **STAGE_OPTIONS)
def register_best(ref: RunRef, record: dict) -> dict:
    """register: the task's best program (its held-out score measured here, never used
    for selection) as `<task>/algoevo-best`, and the task's `ae_task_runs` row."""
    t = task_at(ref, record["position"])
    holdout, _ = evaluate(ref, t, f"{t.key}-holdout", record["best_candidate"], split="holdout")
    once(ref, "registry", "register", f"{t.key}-best", lambda: [registry_row(
        ref, f"{t.name}/algoevo-best", record["best_candidate"], "", holdout, record["best"])])
    once(ref, "ae_task_runs", "register", t.key, lambda: [AETaskRunRow(
        run_id=ref.run_id, position=t.position, task_id=t.name, round=t.round, skill_ver=record["skill_ver"],
        inherited_code=record["inherited_code"], evals=record["evals"], tokens=0, best=record["best"],
        root_score=record["root_score"], evals_to_best=record["evals_to_best"],
        best_candidate=record["best_candidate"], heldout_metric=holdout, split=record["split"])])
    return {**record, "heldout_metric": holdout}
