"""GraphSkillEvo's skill: global principles plus a step graph, and the one way it runs
on toolsim (compiled to a harness document). Pure; no I/O.

A skill document (JSON)::

    {"principles": [{"id": "retry-transient", "on": true, "rule": {trigger, action}}],
     "graph": {"nodes": [{"id": "refund_unshipped_order.0.1a2b3c4d", "step": {"call": "get_order"}}],
               "edges": [{"src": "start", "dst": "refund_unshipped_order.0.1a2b3c4d",
                          "template": "refund_unshipped_order", "checks": [], "retries": 0},
                         {"src": "...", "dst": "end"},
                         {"src": "a", "dst": "b", "when": {"var": "status", "equals": "placed"}}]}}

- *Principles* are global flags: each is one toolsim harness rule that applies to every
  call of every template while it is ``on`` (retry a transient error, read every page,
  look an alias up another way). Mutation toggles them; crossover merges them.
- *Steps* are tool calls or picks (``suites/toolsim/harness.py``'s step format without
  ``when``). Node ids are ``<template>.<k>.<hash of the step>`` (k counts equal steps
  before it in the template), so two skills that share a step share its node.
- *Edges* are transitions. ``start`` has one edge per template the graph covers (with
  that template's post-condition ``checks`` and ``retries``); an edge's ``when`` is the
  observation (an agent variable bound by an earlier result) that must hold for its
  destination to run; ``end`` is the terminal.

How a graph runs (``compile_harness``). Like the paper's model, which reads the graph as
text and is not held to a state machine, the agent follows the graph's order: each
template's nodes in topological order, each step gated by the observation on its
incoming edges. A node runs when any incoming edge is unconditioned, else under the one
condition its incoming edges carry. A template whose steps equal its default plan (and
has no checks or retries) compiles to no skill, so the seed graph compiles to the
suite's seed harness and both are the same candidate.

Validity (``invalid_reason``), checked before an offspring runs: unique node ids; no
dangling edge (every endpoint a node, ``start`` or ``end``); one start edge per
template; no cycle; ``end`` reachable from every template's entry and every node
reachable from ``start``; no node with two different entry conditions; and the compiled
harness parses. An invalid skill is a recorded result (its reason), never a crash.

Departures from the paper: principles are harness rules, not prose; the graph covers
toolsim's 8 request templates under one ``start`` node; edges gate steps on observed
variables (the suite's ``when``), they do not branch the agent between alternatives.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections import deque
from typing import Any, Mapping

from suites.toolsim.harness import HarnessError, parse_harness
from suites.toolsim.templates import TEMPLATES, get_template

START, END = "start", "end"
SkillDoc = dict[str, Any]


class InvalidSkill(ValueError):
    """A skill document that breaks a validity rule; the message is the recorded reason."""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def skill_id(skill: Mapping[str, Any]) -> str:
    """The skill's content id: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical(skill).encode()).hexdigest()


def node_id(template: str, step: Mapping[str, Any], earlier: int) -> str:
    return f"{template}.{earlier}.{hashlib.sha256(canonical(step).encode()).hexdigest()[:8]}"


def template_of(node: str) -> str:
    return node.split(".", 1)[0]


# -- harness -> graph ------------------------------------------------------------------


def _chain(template: str, steps: list[Mapping[str, Any]], checks: list, retries: int) -> tuple[list, list]:
    """Nodes and edges of one template's procedure: a chain whose gated steps (``when``)
    are entered on conditioned edges and can be skipped by an edge around them."""
    nodes, seen = [], {}
    for raw in steps:
        step = {k: v for k, v in raw.items() if k != "when"}
        key = canonical(step)
        nodes.append({"id": node_id(template, step, seen.get(key, 0)), "step": step})
        seen[key] = seen.get(key, 0) + 1
    whens = [raw.get("when") for raw in steps] + [None]
    ids = [START] + [n["id"] for n in nodes] + [END]
    edges = [{"src": START, "dst": ids[1], "template": template, "checks": list(checks), "retries": retries,
              **({"when": whens[0]} if whens[0] is not None else {})}]
    for i in range(1, len(ids) - 1):
        for j in range(i + 1, len(ids)):  # edges to the next node and around each gated one
            edge = {"src": ids[i], "dst": ids[j]}
            if whens[j - 1] is not None:
                edge["when"] = whens[j - 1]
            edges.append(edge)
            if whens[j - 1] is None:
                break
    return nodes, edges


def from_harness(document: Mapping[str, Any]) -> SkillDoc:
    """The skill of a harness document: its rules as principles (on), every template's
    procedure (its skill, else the default plan) as a chain in the step graph."""
    principles = [{"id": rule.get("id", f"rules[{i}]"), "on": True,
                   "rule": {k: v for k, v in rule.items() if k != "id"}}
                  for i, rule in enumerate(document.get("rules", []))]
    skills = {s["trigger"]["template"]: s for s in document.get("skills", [])}
    nodes, edges = [], []
    for template in TEMPLATES:
        skill = skills.get(template)
        steps = list(skill["steps"]) if skill else list(get_template(template).plan)
        chain = _chain(template, copy.deepcopy(steps), copy.deepcopy(skill.get("checks", [])) if skill else [],
                       skill.get("retries", 0) if skill else 0)
        nodes += chain[0]
        edges += chain[1]
    return {"principles": principles, "graph": {"nodes": nodes, "edges": edges}}


def seed_skill() -> SkillDoc:
    """The strategy-free skill: no principles, every template's default plan."""
    return from_harness({"version": 1, "rules": [], "skills": []})


# -- structure -------------------------------------------------------------------------


def successors(skill: Mapping[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for edge in skill["graph"]["edges"]:
        out.setdefault(edge["src"], []).append(edge["dst"])
    return out


def reachable(skill: Mapping[str, Any], root: str) -> set[str]:
    """Nodes reachable from ``root`` (itself included; ``end`` left out)."""
    nexts, seen, todo = successors(skill), {root}, [root]
    while todo:
        for dst in nexts.get(todo.pop(), []):
            if dst not in seen and dst != END:
                seen.add(dst)
                todo.append(dst)
    return seen


def entries(skill: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """template -> its start edge."""
    return {e["template"]: e for e in skill["graph"]["edges"] if e["src"] == START}


def _order(skill: Mapping[str, Any], members: set[str]) -> list[str]:
    """Topological order of ``members`` (Kahn, ties by id); raises InvalidSkill on a cycle."""
    indegree = {m: 0 for m in members}
    for edge in skill["graph"]["edges"]:
        if edge["src"] in members and edge["dst"] in members:
            indegree[edge["dst"]] += 1
    nexts, ready, order = successors(skill), sorted(m for m, d in indegree.items() if d == 0), []
    queue = deque(ready)
    while queue:
        node = queue.popleft()
        order.append(node)
        for dst in sorted(nexts.get(node, [])):
            if dst in indegree:
                indegree[dst] -= 1
                if indegree[dst] == 0:
                    queue.append(dst)
    if len(order) < len(members):
        raise InvalidSkill(f"cycle through {sorted(members - set(order))[0]}")
    return order


def _structure(skill: Mapping[str, Any]) -> None:
    nodes = [n["id"] for n in skill["graph"]["nodes"]]
    if len(set(nodes)) < len(nodes):
        raise InvalidSkill(f"duplicate node {next(n for n in nodes if nodes.count(n) > 1)}")
    known = set(nodes) | {START, END}
    for edge in skill["graph"]["edges"]:
        for end in (edge["src"], edge["dst"]):
            if end not in known:
                raise InvalidSkill(f"dangling edge {edge['src']} -> {edge['dst']}: no node {end}")
        if edge["src"] == END or edge["dst"] == START:
            raise InvalidSkill(f"edge {edge['src']} -> {edge['dst']} leaves end or enters start")
    starts = [e["template"] for e in skill["graph"]["edges"] if e["src"] == START]
    for template in starts:
        if template not in TEMPLATES:
            raise InvalidSkill(f"start edge to unknown template {template!r}")
        if starts.count(template) > 1:
            raise InvalidSkill(f"template {template} has {starts.count(template)} start edges")
    covered = reachable(skill, START)
    orphans = sorted(set(nodes) - covered)
    if orphans:
        raise InvalidSkill(f"node {orphans[0]} is unreachable from start")
    nexts = successors(skill)
    for template, edge in entries(skill).items():
        members = reachable(skill, edge["dst"])
        _order(skill, members)
        if not any(END in nexts.get(m, []) for m in members):
            raise InvalidSkill(f"end is unreachable from the entry of {template}")


# -- graph -> harness ------------------------------------------------------------------


def _gate(skill: Mapping[str, Any], node: str) -> dict[str, Any] | None:
    incoming = [e for e in skill["graph"]["edges"] if e["dst"] == node]
    if any("when" not in e for e in incoming):
        return None
    conditions = {canonical(e["when"]) for e in incoming}
    if len(conditions) > 1:
        raise InvalidSkill(f"node {node} has {len(conditions)} different entry conditions")
    return json.loads(conditions.pop())


def compile_harness(skill: Mapping[str, Any]) -> dict[str, Any]:
    """The harness document the agent runs for this skill (module docstring); raises
    InvalidSkill when the skill is not valid."""
    _structure(skill)
    steps_of = {n["id"]: n["step"] for n in skill["graph"]["nodes"]}
    rules = [{"id": p["id"], **p["rule"]} for p in skill["principles"] if p["on"]]
    skills = []
    for template, edge in entries(skill).items():
        steps = []
        for node in _order(skill, reachable(skill, edge["dst"])):
            gate = _gate(skill, node)
            steps.append({**steps_of[node], **({"when": gate} if gate else {})})
        extra = {k: edge[k] for k in ("checks", "retries") if edge.get(k)}
        if steps == list(get_template(template).plan) and not extra:
            continue
        skills.append({"name": f"graph-{template}", "trigger": {"template": template}, "steps": steps, **extra})
    document = {"version": 1, "rules": rules, "skills": skills}
    try:
        parse_harness(document)
    except HarnessError as exc:
        raise InvalidSkill(f"compiled harness does not parse: {exc}") from None
    return document


def invalid_reason(skill: Any) -> str | None:
    """Why the skill is not valid, or None when it is (the gate's first check)."""
    try:
        if not isinstance(skill, dict) or set(skill) != {"principles", "graph"}:
            raise InvalidSkill("a skill is a mapping with exactly 'principles' and 'graph'")
        compile_harness(skill)
    except InvalidSkill as exc:
        return str(exc)
    except (KeyError, TypeError, AttributeError) as exc:
        return f"malformed skill document: {type(exc).__name__}: {exc}"
    return None
