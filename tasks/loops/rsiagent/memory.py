"""The environment memory (pure): entries (tool, event, state predicate) -> (cause,
remedial action), built only from verified recoveries, revised rather than appended, and
the harness the executor runs with it.

An entry's action is one harness item: a rule (its trigger names the tool and the event)
or a skill (a template's whole remedial action sequence). Its id is the sha256 of its
condition, so a later recovery of the same condition *revises* the entry (the new action
replaces the old) instead of storing a second one. A memory version is the sorted list
of its entries; its id (the candidate id) is the sha256 of that canonical JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from tasks.proposers.rule_evidence import Trace, error_of, failure_point

EMPTY = {"version": 1, "rules": [], "skills": []}
"""No memory: the suite's seed harness (strategy-free default plans)."""


@dataclass(frozen=True)
class Entry:
    entry_id: str
    condition: Mapping[str, str]
    """{"tool", "event", "predicate"}."""
    kind: str
    """"rule" or "skill"."""
    action: Mapping[str, Any]
    cause: str
    """The failure signature the recovery fixed."""
    consequence: str
    source_runs: tuple[str, ...]

    def as_json(self) -> dict[str, Any]:
        return {"entry_id": self.entry_id, "condition": dict(self.condition), "kind": self.kind,
                "action": json.loads(json.dumps(self.action)), "cause": self.cause,
                "consequence": self.consequence, "source_runs": list(self.source_runs)}


def entry_of(raw: Mapping[str, Any]) -> Entry:
    return Entry(raw["entry_id"], dict(raw["condition"]), raw["kind"], dict(raw["action"]), raw["cause"],
                 raw["consequence"], tuple(raw["source_runs"]))


def signature(trace: Trace) -> str | None:
    """The failure signature of an attempt: ``tool:code`` of the step that ended it,
    else ``unmet:<goal>`` / ``broken:<guard>``; None when the verifier passed it."""
    if trace.success:
        return None
    point = failure_point(trace)
    if point is not None:
        step = trace.steps[point]
        error = error_of(step)
        return f"{step['name']}:{error['code'] if error else 'failed'}"
    if trace.broken:
        return f"broken:{trace.broken[0]}"
    return f"unmet:{trace.unmet[0]}" if trace.unmet else "unmet:goal"


def condition_of(kind: str, item: Mapping[str, Any], template: str) -> dict[str, str]:
    """(tool, event, state predicate) of a harness item."""
    if kind == "skill":
        return {"tool": "plan", "event": "skill", "predicate": f"template == {template}"}
    trigger = dict(item["trigger"])
    when = json.dumps(trigger.pop("when", None), sort_keys=True)
    if "on_error" in trigger:
        return {"tool": str(trigger.get("tool", "*")), "event": trigger["on_error"], "predicate": when}
    if "on_result" in trigger:
        return {"tool": trigger["on_result"], "event": f"result:{trigger['field']}={trigger['equals']}",
                "predicate": when}
    kind_of = next(k for k in ("before", "after") if k in trigger)
    return {"tool": trigger[kind_of], "event": kind_of, "predicate": when}


def make_entry(kind: str, item: Mapping[str, Any], template: str, cause: str, source_runs: Sequence[str]) -> Entry:
    """An entry from a verified recovery; a rule is renamed after its entry id so that
    every memory's rules have distinct ids."""
    condition = condition_of(kind, item, template)
    eid = content_id(json.dumps(condition, sort_keys=True))
    action = {**item, "id": f"mem-{eid[:10]}"} if kind == "rule" else dict(item)
    return Entry(eid, condition, kind, action, cause, f"verified recovery: {cause} -> success", tuple(source_runs))


def revise(current: Sequence[Entry], new: Sequence[Entry], max_entries: int) -> list[Entry]:
    """The next memory: a new entry of a known condition replaces it (revision); other new
    entries are added while the memory holds fewer than ``max_entries``."""
    by_id = {e.entry_id: e for e in current}
    for entry in new:
        if entry.entry_id in by_id or len(by_id) < max_entries:
            by_id[entry.entry_id] = entry
    return sorted(by_id.values(), key=lambda e: e.entry_id)


def memory_doc(entries: Sequence[Entry]) -> dict[str, Any]:
    return {"entries": [e.as_json() for e in sorted(entries, key=lambda e: e.entry_id)]}


def memory_bytes(entries: Sequence[Entry]) -> bytes:
    return json.dumps(memory_doc(entries), sort_keys=True).encode()


def memory_id(entries: Sequence[Entry]) -> str:
    """The version's content id (= the sha256 of its stored blob)."""
    return content_id(memory_bytes(entries))


def entries_of(document: Mapping[str, Any]) -> list[Entry]:
    return [entry_of(raw) for raw in document["entries"]]


def harness_of(entries: Sequence[Entry]) -> dict[str, Any]:
    """The executor's harness: the seed harness plus every entry's rule (entry order) and
    every entry's skill (a template's plan replaced by its remedial sequence)."""
    rules = [dict(e.action) for e in entries if e.kind == "rule"]
    skills = [dict(e.action) for e in entries if e.kind == "skill"]
    return {**EMPTY, "rules": json.loads(json.dumps(rules)), "skills": json.loads(json.dumps(skills))}
