"""DENSE's gate and register: the memory gate per select task (``memory.py``: a feedback
document admitted as the task's memory only when its retries beat the current memory's
on the same noise), the champion alias ``toolsim/dense/<task>`` for each admitted one
(names are global to the store, so the next run's candidate must beat this run's
memory), and one comparison row per feedback method against no feedback.

Gate and register run in one transaction: a failed register un-publishes the decisions
(``undo_decision_part``), and a resume re-decides identically."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from prefect import task

from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.runtime.start import CHAMPION, latest_champion
from tasks.loops.dense.memory import Trial, compare, memory_verdict, per_task
from tasks.loops.dense.refit import retry_attempt
from tasks.loops.dense.stages import config_of, documents_of, tasks_of
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS

MEMORY_GATE = "dense_memory"
METHOD_GATE = "dense_feedback_method"
GATE_SPLIT = "select"


def memory_name(task_id: str) -> str:
    return f"toolsim/dense/{task_id}"


def _trials(ref: RunRef, case, document: dict[str, Any]) -> list[Trial]:
    config = config_of(ref)
    return [Trial(r, bool(e.evaluation.success), e.tool_calls)
            for r in range(config.budget) for e in (retry_attempt(case, document, config.seed, r),)]


def memory_decision(ref: RunRef, case, documents: dict, registry: list[RegistryRow]) -> GateDecisionRow:
    """The memory gate on one select task (see ``memory.py``): ``documents`` are repeat
    0's (``documents_of``); the baseline is the latest champion of the task's memory in
    the store from any earlier run."""
    store, section = store_for(ref.store_uri), config_of(ref).dense
    fb_id, document = documents[(case.case_id, section.memory_method)]
    champion = latest_champion(registry, memory_name(case.case_id), ref.run_id)
    baseline_id, baseline = (champion.candidate_id, json.loads(store.get_blob(champion.candidate_id))) if champion \
        else documents[(case.case_id, "none")]
    mine, theirs = _trials(ref, case, document), _trials(ref, case, baseline)
    verdict = memory_verdict(mine, theirs, same_content=fb_id == baseline_id)
    evidence = {"task": case.case_id, "method": section.memory_method, "baseline": "champion" if champion else "none",
                "baseline_run": champion.run_id if champion else None,
                "candidate": [vars(t) for t in mine], "baseline_trials": [vars(t) for t in theirs],
                "delta_tool_calls": verdict.delta_calls}
    outcome = GateOutcome(
        decision=verdict.decision, reason=verdict.reason, improved_cases=[case.case_id] if verdict.delta_pass > 0 else [],
        regressed_cases=[case.case_id] if verdict.delta_pass < 0 else [], select_score=verdict.candidate_pass,
        baseline_score=verdict.baseline_pass, delta=verdict.delta_pass, ci_low=None, ci_high=None,
        n_cases=len(mine), evidence_json=dump_evidence(evidence))
    return decision_row(ref, 0, fb_id, MEMORY_GATE, baseline_id, outcome, id_parts=(fb_id, MEMORY_GATE))


def method_decisions(ref: RunRef) -> list[GateDecisionRow]:
    """One row per feedback method: − none on select tasks, with the task-bootstrap CI."""
    config = config_of(ref)
    attempts = [a for a in store_for(ref.store_uri).read_rows("attempts", ref.run_id)
                if a.phase == "retry" and a.split == GATE_SPLIT]
    means = per_task((a.feedback_method, a.task_id, a.passed, a.tool_calls) for a in attempts)
    rows = []
    for method in config.dense.methods:
        if method == "none" or method not in means:
            continue
        c = compare(means, method, resamples=config.dense.resamples, seed=config.seed)
        decision = "accept" if c.ci_low > 0 else "reject"
        reason = (f"{decision}: strict pass {c.baseline_pass:.3f} -> {c.method_pass:.3f} (Δ {c.delta_pass:+.3f}, "
                  f"95% CI [{c.ci_low:+.3f}, {c.ci_high:+.3f}]) over {len(c.tasks)} select tasks; retry tool calls "
                  f"Δ {c.delta_calls:+.2f}")
        evidence = json_safe({"method": method, "tasks": list(c.tasks), "delta_tool_calls": c.delta_calls,
                              "tool_calls_ci": list(c.calls_ci), "repeats": config.budget})
        rows.append(decision_row(ref, 0, method, METHOD_GATE, "none", GateOutcome(
            decision=decision, reason=reason, improved_cases=list(c.improved), regressed_cases=list(c.regressed),
            select_score=json_safe(c.method_pass), baseline_score=json_safe(c.baseline_pass),
            delta=json_safe(c.delta_pass), ci_low=json_safe(c.ci_low), ci_high=json_safe(c.ci_high),
            n_cases=len(c.tasks), evidence_json=dump_evidence(evidence)), id_parts=(method, METHOD_GATE)))
    return rows


@task(name="gate", **STAGE_OPTIONS)
def gate_memories(ref: RunRef) -> int:
    """gate: every select task's memory candidate, and the method comparisons."""
    remember_decision_part(ref, "gate", "memory")
    def rows() -> list[GateDecisionRow]:
        documents, registry = documents_of(ref, 0), store_for(ref.store_uri).read_rows("registry")
        return [*(memory_decision(ref, case, documents, registry) for case in tasks_of(ref) if case.split == GATE_SPLIT),
                *method_decisions(ref)]

    rows = once(ref, "gate_decisions", "gate", "memory", rows)
    return sum(r.gate == MEMORY_GATE and r.decision == "accept" for r in rows)


gate_memories.on_rollback(undo_decision_part)


@task(name="register", **STAGE_OPTIONS)
def register_memories(ref: RunRef) -> int:
    """register: each admitted memory as the champion of its task's name."""
    store = store_for(ref.store_uri)
    accepted = [d for d in store.read_part("gate_decisions", ref.run_id, "gate", "memory")
                if d.gate == MEMORY_GATE and d.decision == "accept"]

    def rows() -> list[RegistryRow]:
        registry, now = store.read_rows("registry"), datetime.now(timezone.utc)
        out = []
        for d in accepted:
            name = memory_name(json.loads(d.evidence_json)["task"])
            version = 1 + max((r.version for r in registry if r.name == name), default=0)
            out.append(RegistryRow(run_id=ref.run_id, name=name, version=version, candidate_id=d.candidate_id,
                                   stage="stable", alias=CHAMPION, decision_id=d.decision_id,
                                   select_score=d.select_score, holdout_score=None, event_at=now))
        return out

    return len(once(ref, "registry", "register", "memory", rows))


def dense_summary(ref: RunRef) -> dict[str, object]:
    """What the CLI prints: one line per method comparison, and the memories admitted."""
    rows = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", "memory")
    memory = [r for r in rows if r.gate == MEMORY_GATE]
    out: dict[str, object] = {"run_id": ref.run_id}
    out.update({f"method {r.candidate_id}": r.reason for r in rows if r.gate == METHOD_GATE})
    out["memories"] = f"{sum(r.decision == 'accept' for r in memory)} of {len(memory)} select tasks admitted"
    return out
