"""ModularRSI's analysis: group a task's rollouts by outcome, contrast a success with a
failure of the same task at their first divergent event, name the event's type and
route it to the module that owns that behaviour, then keep the defects that recur
across tasks as findings. Pure; traces are ``tasks.proposers.rule_evidence.Trace``.

    mixed        success vs failure of the same task: the failure's step at the first
                 event where the two differ (same request, other noise)
    no_success   one-sided diagnosis: the step that ended the failing attempt
    all_success  efficiency: the rollout that used more calls than the task's fewest
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from schemas.ids import content_id
from tasks.proposers.rule_evidence import (Trace, error_of, failure_point, is_call, result_of,
                                          unfollowed_cursors)

TOOL_ERRORS = ("transient_unavailable", "rate_limited")
CONTEXT_ERRORS = ("unbound_variable", "invalid_argument", "not_found", "precondition_failed")
EVENT_MODULE = {
    "tool_error": "tool_wrapper",
    "stale_read": "observation",
    "unread_page": "observation",
    "missing_context": "context",
    "plan_divergence": "step_loop",
    "step_budget": "step_loop",
    "inefficient": "tool_wrapper",
    "goal_unmet": "completion",
    "check_failed": "completion",
}
"""Event type -> the module whose scope handles it."""


@dataclass(frozen=True)
class Group:
    task_id: str
    n_succ: int
    n_fail: int

    @property
    def mode(self) -> str:
        return "mixed" if self.n_succ and self.n_fail else ("all_success" if self.n_succ else "no_success")


@dataclass(frozen=True)
class Defect:
    task_id: str
    event: str
    module: str
    step: int | None


@dataclass(frozen=True)
class Finding:
    module: str
    event: str
    support_task_ids: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.event} recurs in {len(self.support_task_ids)} tasks; routed to {self.module}"

    @property
    def finding_id(self) -> str:
        return content_id(json.dumps([self.module, self.event, list(self.support_task_ids)]))


def groups(rollouts: Mapping[str, Sequence[Trace]]) -> list[Group]:
    """Per task (sorted), its successes and failures."""
    return [Group(t, sum(r.success for r in rs), sum(not r.success for r in rs)) for t, rs in sorted(rollouts.items())]


def signature(step: Mapping) -> tuple:
    """What makes two steps the same event: kind, name, outcome (error code)."""
    error = error_of(step) if step["kind"] == "tool_call" else None
    return (step["kind"], step["name"], bool(step["ok"]), error["code"] if error else None)


def first_divergence(success: Trace, failure: Trace) -> int | None:
    """Index of the first step where the failure differs from the success; the failure's
    length when it is a prefix of the success; None when they are the same events."""
    for index, (a, b) in enumerate(zip(success.steps, failure.steps)):
        if signature(a) != signature(b):
            return index
    if len(failure.steps) != len(success.steps):
        return min(len(failure.steps), len(success.steps))
    return None


def event_at(trace: Trace, index: int | None, max_steps: int | None = None) -> str:
    """The type of the failing trace's event at ``index`` (past its end: how it ended)."""
    if index is None or index >= len(trace.steps):
        if max_steps is not None and len(trace.steps) >= max_steps:
            return "step_budget"
        return "goal_unmet"
    step = trace.steps[index]
    if step["kind"] == "check" and not step["ok"]:
        return "check_failed"
    if is_call(step):
        error = error_of(step)
        if error is not None:
            return "tool_error" if error["code"] in TOOL_ERRORS else (
                "missing_context" if error["code"] in CONTEXT_ERRORS else "plan_divergence")
        result = result_of(step)
        if result.get("stale"):
            return "stale_read"
        if result.get("next_page") is not None:
            return "unread_page"
    if step["kind"] == "pick" and not step["ok"]:  # a list read in part, or a value never fetched
        return "unread_page" if unfollowed_cursors(replace(trace, steps=trace.steps[:index])) else "missing_context"
    return "plan_divergence"


def diagnose(task_id: str, traces: Sequence[Trace], max_steps: int | None = None) -> Defect | None:
    """The task's defect by its outcome mix (module docstring); None when nothing to fix."""
    wins, losses = [t for t in traces if t.success], [t for t in traces if not t.success]
    if wins and losses:
        index = first_divergence(wins[0], losses[0])
        event = event_at(losses[0], index, max_steps)
    elif losses:
        index = failure_point(losses[0])
        event = event_at(losses[0], index, max_steps)
    else:
        calls = [sum(is_call(s) for s in t.steps) for t in wins]
        if not calls or max(calls) == min(calls):
            return None
        index, event = None, "inefficient"
    return Defect(task_id, event, EVENT_MODULE[event], index)


def findings(defects: Sequence[Defect], min_support: int = 2) -> list[Finding]:
    """Defects of one (module, event) seen in at least ``min_support`` tasks, most
    supported first (then by module order, event): the recurring ones."""
    by_kind: dict[tuple[str, str], set[str]] = {}
    for d in defects:
        by_kind.setdefault((d.module, d.event), set()).add(d.task_id)
    kept = [Finding(m, e, tuple(sorted(ts))) for (m, e), ts in by_kind.items() if len(ts) >= min_support]
    return sorted(kept, key=lambda f: (-len(f.support_task_ids), f.module, f.event))
