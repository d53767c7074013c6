"""DENSE's distill step without outcome labels: one toolsim trajectory -> a nested task
tree of subgoals, each with its issues, their closure and a shortcut.

- Subgoals come from the template's plan steps (``suites.toolsim.plans``): node ``s<i>``
  is plan step ``i`` under the root (the request). A plan-level step (recorded under the
  skill's or default plan's ``via``) that matches plan step ``i`` enters node ``i``; a
  match of step 0 after the attempt ended is the skill's next attempt. Steps that rules
  caused (retries, waits, switched tools, paging) belong to the node entered last.
- An issue is a failed postcondition: a call that failed, a pick with no match, a check
  that did not hold. Its evidence is the step, the error code and message, and the
  supporting observation (the latest call result's ``next_page`` cursor, when set).
- Closure (``reconcile=True``, the paper's rule) needs concrete evidence of a later
  recovery *in the same subgoal*: a later successful call or pick of that node. A child's
  recovery does not complete its parent: the root re-checks its children and is complete
  only when every subgoal's last event is a success and the last subgoal was reached;
  the issues its children leave open are the root's open issues.
  ``reconcile=False`` (the ablation) closes an issue at any later success anywhere in the
  trajectory, completes a subgoal when anything succeeded after its first failure, and
  completes the root when the trajectory's last step succeeded.
- Shortcut: a node's repeated attempts compress into counts (entries, failures, failure
  causes) and its *working operation*: the last successful call or pick of the node,
  with the arguments it ran with, which rebuilds its progress directly.

No outcome label is read: the hidden verifier's conditions never reach this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from suites.toolsim.agent import default_skill

ROOT = "root"
ACTIONS = ("tool_call", "pick", "check")


@dataclass(frozen=True)
class Issue:
    node_id: str
    step: int
    kind: str
    """The failed step's kind: "tool_call", "pick" or "check"."""
    name: str
    """The tool (or the picked list variable)."""
    code: str
    message: str
    next_page: Any = None
    """The supporting observation: the cursor of the latest call result before the step."""
    closed: bool = False
    closing_step: int | None = None

    @property
    def label(self) -> str:
        return f"{self.name}: {self.code}"


@dataclass(frozen=True)
class Node:
    node_id: str
    parent: str | None
    subgoal: str
    status: str
    """"completed", "open" or "unreached"."""
    step_ids: tuple[int, ...]
    entries: int
    """Times the subgoal was entered (the skill's attempts that reached it)."""
    failures: int
    working: Mapping[str, Any] | None
    """The shortcut's working operation: {kind, name, args} of the last success, or None."""
    issues: tuple[Issue, ...]


@dataclass(frozen=True)
class Tree:
    template: str
    nodes: tuple[Node, ...]
    """The root first, then the subgoals in plan order."""

    @property
    def root(self) -> Node:
        return self.nodes[0]

    @property
    def subgoals(self) -> tuple[Node, ...]:
        return self.nodes[1:]

    def open_issues(self) -> list[Issue]:
        return [i for node in self.subgoals for i in node.issues if not i.closed]


def plan_of(template: str) -> list[tuple[str, str]]:
    """(kind, name) of each plan step: ("tool_call", tool) or ("pick", list variable)."""
    return [("pick", s.pick.source) if s.pick is not None else ("tool_call", s.tool)
            for s in default_skill(template).steps]


def subgoal_name(kind: str, name: str) -> str:
    return f"pick {name}" if kind == "pick" else f"call {name}"


def _payload(step: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(step["result_json"] or "{}")


def assign(template: str, steps: Sequence[Mapping[str, Any]], skill: str) -> list[int]:
    """The plan index each step belongs to (see the module docstring). A plan-level step
    matches the first plan step at or after the expected one; a step found only before it
    starts the skill's next attempt (plans never repeat a step)."""
    plan, cursor, expected, out = plan_of(template), 0, 0, []
    for step in steps:
        if _payload(step).get("via") == skill and step["kind"] in ("tool_call", "pick"):
            key = (step["kind"], step["name"])
            ahead = [i for i in range(expected, len(plan)) if plan[i] == key] or [
                i for i in range(len(plan)) if plan[i] == key]
            cursor = ahead[0] if ahead else cursor
            expected = cursor + 1
        out.append(cursor)
    return out


def _issue(node_id: str, step: Mapping[str, Any], cursor: Any) -> Issue:
    error = _payload(step).get("error") or {"code": "check_failed", "message": step["result_json"]}
    return Issue(node_id, int(step["step"]), step["kind"], step["name"], error["code"], error["message"], cursor)


def _closure(issue: Issue, successes: Sequence[tuple[int, int]], node_index: int, reconcile: bool) -> Issue:
    later = [s for s, n in successes if s > issue.step and (n == node_index or not reconcile)]
    if not later:
        return issue
    return Issue(**{**issue.__dict__, "closed": True, "closing_step": later[0]})


def build_tree(template: str, steps: Sequence[Mapping[str, Any]], skill: str, reconcile: bool = True) -> Tree:
    """The task tree of one trajectory run under a skill (or default plan) named ``skill``."""
    plan, owner = plan_of(template), assign(template, steps, skill)
    actions = [(s, i) for s, i in zip(steps, owner) if s["kind"] in ACTIONS]
    successes = [(int(s["step"]), i) for s, i in actions if s["ok"]]
    raw: dict[int, list[Issue]] = {i: [] for i in range(len(plan))}
    cursor = None
    for step, index in actions:
        if not step["ok"]:
            raw[index].append(_issue(f"s{index}", step, cursor))
        elif step["kind"] == "tool_call":
            cursor = (_payload(step).get("result") or {}).get("next_page")
    nodes = []
    for index, (kind, name) in enumerate(plan):
        own = [s for s, i in zip(steps, owner) if i == index]
        issues = tuple(_closure(x, successes, index, reconcile) for x in raw[index])
        good = [s for s in own if s["ok"] and s["kind"] in ACTIONS]
        last = [s for s in own if s["kind"] in ACTIONS][-1:]
        status = _status(own, last, successes, reconcile)
        working = ({"kind": good[-1]["kind"], "name": good[-1]["name"], "args": json.loads(good[-1]["args_json"])}
                   if good else None)
        nodes.append(Node(f"s{index}", ROOT, subgoal_name(kind, name), status,
                          tuple(int(s["step"]) for s in own), _entries(own, skill, (kind, name)),
                          sum(not s["ok"] for s in own if s["kind"] in ACTIONS), working, issues))
    return Tree(template, (_root(template, steps, nodes, reconcile), *nodes))


def _status(own: Sequence[Mapping[str, Any]], last: Sequence[Mapping[str, Any]],
            successes: Sequence[tuple[int, int]], reconcile: bool) -> str:
    """Reconciled: the node's own last event decides. Lenient: any success anywhere after
    its first failure completes it (a later attempt's first step, say)."""
    if not own:
        return "unreached"
    if reconcile:
        return "completed" if last and last[0]["ok"] else "open"
    failed = [int(s["step"]) for s in own if s["kind"] in ACTIONS and not s["ok"]]
    return "completed" if not failed or any(step > failed[0] for step, _ in successes) else "open"


def _entries(own: Sequence[Mapping[str, Any]], skill: str, key: tuple[str, str]) -> int:
    return sum(_payload(s).get("via") == skill and (s["kind"], s["name"]) == key for s in own)


def _root(template: str, steps: Sequence[Mapping[str, Any]], nodes: Sequence[Node], reconcile: bool) -> Node:
    """The parent re-checks its children (reconcile) or takes the last step's word."""
    if reconcile:
        left_open = tuple(i for n in nodes for i in n.issues if not i.closed)
        done = all(n.status == "completed" for n in nodes)
    else:
        left_open = ()
        done = bool(steps) and bool(steps[-1]["ok"])
    return Node(ROOT, None, f"serve {template}", "completed" if done else "open",
                tuple(int(s["step"]) for s in steps), 1, sum(n.failures for n in nodes), None, left_open)
