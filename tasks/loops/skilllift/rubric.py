"""SkillLift's rubric on toolsim: weighted static checks on a rule set, read without
running it (the inner loop's text-only proxy). Pure; no I/O.

An item is a JSON mapping ``{"id", "kind", "weight", "note", ...}``; its score on a
harness document is in [0, 1]:

- ``covers`` (``trigger: {kind, tool, code?, action?}``): some rule reacts to that
  trigger (an ``on_error`` rule for ``tool: "*"`` covers every tool), with that action
  kind when ``action`` is given. Seeded from the failed events of a skill's real runs
  ("has a recovery rule for tool T failing with E").
- ``retry_depth`` (``target``): the mean over retry rules of min(max / target, 1), 0
  without retry rules ("retries persistently": text that looks thorough).
- ``breadth``: the share of toolsim's error codes some ``on_error`` rule handles
  ("handles every failure").
- ``concise`` (``limit``): 1 up to ``limit`` rules, then limit / rules.

The rubric score is sum(w_i s_i) / sum(|w_i|): weights may turn negative when the
calibrator learns that an item ranks skills the wrong way.

Departures from the paper: the rubric is not written by a model reading the task; its
items are these four static kinds, seeded from the initial skill's failed events (tool,
error code; unfollowed list cursors), as the spec's offline instance says.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping, Sequence

from suites.toolsim.tools import ERROR_CODES
from tasks.proposers.rule_evidence import Trace, error_of, failure_point, is_call, unfollowed_cursors

Item = dict[str, Any]
Rubric = list[Item]

GENERIC_ITEMS: tuple[Item, ...] = (
    {"id": "retry_depth", "kind": "retry_depth", "target": 3, "weight": 0.2,
     "note": "retries a failing call persistently"},
    {"id": "breadth", "kind": "breadth", "weight": 0.2, "note": "has a recovery rule for every error code"},
    {"id": "concise", "kind": "concise", "limit": 6, "weight": 0.1, "note": "stays short"},
)
"""What a text-only reader rewards in any rule set, whatever the task."""


def _rules(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(document.get("rules", []))


def _reacts(rule: Mapping[str, Any], trigger: Mapping[str, Any]) -> bool:
    kind, tool, code = trigger["kind"], trigger["tool"], trigger.get("code")
    raw = rule["trigger"]
    if kind == "on_error":
        if raw.get("on_error") != code or raw.get("tool", "*") not in (tool, "*"):
            return False
    elif raw.get(kind) != tool:
        return False
    return trigger.get("action") in (None, *rule["action"])


def item_score(item: Mapping[str, Any], document: Mapping[str, Any]) -> float:
    """The item's check on the document, in [0, 1]."""
    rules = _rules(document)
    if item["kind"] == "covers":
        return float(any(_reacts(r, item["trigger"]) for r in rules))
    if item["kind"] == "retry_depth":
        depths = [min(r["action"]["retry"]["max"] / item["target"], 1.0) for r in rules if "retry" in r["action"]]
        return sum(depths) / len(depths) if depths else 0.0
    if item["kind"] == "breadth":
        return len({r["trigger"]["on_error"] for r in rules if "on_error" in r["trigger"]}) / len(ERROR_CODES)
    if item["kind"] == "concise":
        return 1.0 if len(rules) <= item["limit"] else item["limit"] / len(rules)
    raise ValueError(f"rubric item {item.get('id')!r}: unknown kind {item['kind']!r}")


def item_scores(rubric: Sequence[Mapping[str, Any]], document: Mapping[str, Any]) -> list[float]:
    return [item_score(item, document) for item in rubric]


def rubric_score(rubric: Sequence[Mapping[str, Any]], document: Mapping[str, Any]) -> float:
    """sum(w_i s_i) / sum(|w_i|); 0 for a rubric without weight."""
    total = sum(abs(item["weight"]) for item in rubric)
    if total == 0:
        return 0.0
    return sum(item["weight"] * s for item, s in zip(rubric, item_scores(rubric, document))) / total


def failed_events(traces: Sequence[Trace]) -> Counter:
    """(kind, tool, code) of each failed run's failure: the erroring call that ended the
    plan (``on_error``), or a list it read only in part (``before`` + paginate); counted
    once per failing case."""
    events: Counter = Counter()
    for trace in traces:
        if trace.success:
            continue
        found = set()
        index = failure_point(trace)
        if index is not None and is_call(trace.steps[index]) and error_of(trace.steps[index]):
            found.add(("on_error", trace.steps[index]["name"], error_of(trace.steps[index])["code"]))
        found.update(("before", tool, None) for tool in unfollowed_cursors(trace))
        events.update(found)
    return events


def covers_item(kind: str, tool: str, code: str | None, weight: float) -> Item:
    trigger = {"kind": kind, "tool": tool, **({"code": code} if code else {"action": "paginate"})}
    name = f"covers:{kind}:{tool}:{code or 'paginate'}"
    note = f"recovers when {tool} fails with {code}" if code else f"reads every page of {tool}"
    return {"id": name, "kind": "covers", "trigger": trigger, "weight": weight, "note": note}


def seed_rubric(traces: Sequence[Trace]) -> Rubric:
    """The initial rubric: one ``covers`` item per failed event of the initial skill's
    runs (weight: the share of failing cases with that event), then the generic items."""
    return extend_rubric([], traces) + [dict(item) for item in GENERIC_ITEMS]


def extend_rubric(rubric: Sequence[Mapping[str, Any]], traces: Sequence[Trace]) -> Rubric:
    """The rubric with a ``covers`` item added for every failed event of ``traces`` it
    has no item for (weight: the share of failing cases with that event), in a fixed
    order (most frequent first, then by id)."""
    out = [dict(item) for item in rubric]
    failures = sum(not t.success for t in traces)
    known = {item["id"] for item in out}
    added = []
    for (kind, tool, code), n in failed_events(traces).items():
        item = covers_item(kind, tool, code, round(n / failures, 6))
        if item["id"] not in known:
            added.append((-n, item["id"], item))
    return out + [item for _, _, item in sorted(added, key=lambda a: a[:2])]


def rubric_json(rubric: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(rubric), sort_keys=True)
