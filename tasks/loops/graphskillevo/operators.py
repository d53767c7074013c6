"""GraphSkillEvo's operators and selection: failure-keyed mutation, crossover of step
graphs at a shared node, the frozen operator rotation, the training batch of a
generation and the top-k survivors. Pure; the only randomness is the caller's
``random.Random``.

Mutation (the non-LLM default) reads at most ``max_failures`` failed trajectories of
one candidate: the rule proposer (``tasks.proposers.rules``) turns them into one repair
of the candidate's compiled harness (a new principle: retry, page, switch tool, read
first; or a graph edit: insert a step, a pick, a gated follow-up), and the repaired
harness is read back into a skill (``graph.from_harness``), keeping the parent's
principles that were off. A repair that recreates a known skill is excluded and the next
best tried. When the failures support no new repair, mutation toggles one principle
instead (seeded choice). Crossover keeps parent A's skill, adds B's principles
that A lacks, and swaps one subgraph: the descendants of a node both graphs share (or a
template's whole procedure, rooted at ``start``) are replaced by B's. Edges of A that led
into the removed part stay, so a crossover can leave a dangling edge: the gate records
that offspring as invalid.

Departures from the paper: the mutation's repair comes from the rule proposer's
operators rather than an LLM reading the failures; crossover swaps subgraphs of the
same template only (node ids carry the template).
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Container, Mapping, Sequence

from tasks.loops.graphskillevo.graph import (
    START,
    SkillDoc,
    canonical,
    compile_harness,
    entries,
    from_harness,
    reachable,
    skill_id,
)
from tasks.proposers.rule_evidence import Evidence, Trace, Trial
from tasks.proposers.rules import NoRuleEvidence, RuleProposer

MUTATE, CROSSOVER = "mutate", "crossover"
MAX_TRIES = 8
"""Repairs tried per mutation before it falls back to a toggle."""


@dataclass(frozen=True)
class Offspring:
    """One proposed skill: ``op`` (mutate:<operator> or crossover:<root>), its parents'
    ids and why. ``skill`` may be invalid (the gate checks it), or None when an llm
    answer held no skill (``rationale`` says why)."""

    skill: SkillDoc | None
    op: str
    parents: tuple[str, ...]
    rationale: str


def operator_for(generation: int, slot: int, operators: Sequence[str], population: int) -> str:
    """The frozen rotation: slot ``slot`` of generation ``generation`` uses
    ``operators[(generation + slot) % len]``; crossover needs two members, else mutate."""
    op = operators[(generation + slot) % len(operators)]
    return MUTATE if op == CROSSOVER and population < 2 else op


def batch_of(stream: Sequence[str], generation: int, size: int) -> list[str]:
    """Generation ``generation``'s (1-based) training batch: the next ``size`` cases of
    the stream, wrapping around."""
    if not stream:
        return []
    start = (generation - 1) * size
    return [stream[(start + i) % len(stream)] for i in range(min(size, len(stream)))]


def select(pool: Sequence[tuple[str, float, int]], k: int) -> list[str]:
    """The top ``k`` of (skill id, validation success, generation born): highest
    success first, older first on ties, then by id."""
    return [sid for sid, _, _ in sorted(pool, key=lambda x: (-x[1], x[2], x[0]))[:k]]


def _off_principles(parent: Mapping[str, Any], child: SkillDoc) -> SkillDoc:
    present = {p["id"] for p in child["principles"]}
    kept = [copy.deepcopy(p) for p in parent["principles"] if not p["on"] and p["id"] not in present]
    return {**child, "principles": child["principles"] + kept}


def toggle(parent: Mapping[str, Any], rng: random.Random) -> tuple[SkillDoc, str] | None:
    """Flip one principle (seeded choice); None when the skill has none."""
    if not parent["principles"]:
        return None
    child = copy.deepcopy(dict(parent))
    index = rng.randrange(len(child["principles"]))
    principle = child["principles"][index]
    principle["on"] = not principle["on"]
    return child, f"principle {principle['id']} turned {'on' if principle['on'] else 'off'}"


def mutate(parent: Mapping[str, Any], parent_id: str, failures: Sequence[Trace], successes: Sequence[Trace],
           rng: random.Random, known: Container[str] = ()) -> Offspring | None:
    """A failure-keyed repair of ``parent`` (module docstring) whose skill id is not in
    ``known`` (a repair that recreates a known skill is excluded and the next best is
    tried); None when neither a repair nor a toggle is possible. ``parent`` must be valid."""
    document, tried = compile_harness(parent), []
    for _ in range(MAX_TRIES):
        evidence = Evidence(tuple(failures), tuple(successes), tuple(Trial(p, ()) for p in tried))
        try:
            proposal = RuleProposer().propose(evidence, document, rng)
        except NoRuleEvidence:
            break
        child = _off_principles(parent, from_harness(proposal.document))
        if skill_id(child) not in known:
            return Offspring(child, f"{MUTATE}:{proposal.operator}", (parent_id,), proposal.rationale)
        tried.append(proposal)
    toggled = toggle(parent, rng)
    if toggled is None or skill_id(toggled[0]) in known:
        return None
    return Offspring(toggled[0], f"{MUTATE}:toggle_principle", (parent_id,), toggled[1])


def _subgraph(skill: Mapping[str, Any], root: str, template: str) -> tuple[set[str], str]:
    """(nodes under ``root``, its entry node): ``root`` START means the template's whole
    procedure."""
    entry = entries(skill)[template]["dst"] if root == START else root
    return reachable(skill, entry), entry


def shared_roots(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(root, template) pairs where a swap changes A: nodes both graphs hold whose
    subgraphs differ, and the start of templates both cover whose procedures differ."""
    steps_a = {n["id"]: canonical(n["step"]) for n in a["graph"]["nodes"]}
    steps_b = {n["id"]: canonical(n["step"]) for n in b["graph"]["nodes"]}

    def body(skill, steps, root, template):
        nodes, _ = _subgraph(skill, root, template)
        edges = sorted(canonical(e) for e in skill["graph"]["edges"] if e["src"] in nodes)
        return sorted(steps[n] for n in nodes), edges

    roots = []
    common = sorted(set(entries(a)) & set(entries(b)))
    for template in common:
        if body(a, steps_a, START, template) != body(b, steps_b, START, template):
            roots.append((START, template))
    for node in sorted(set(steps_a) & set(steps_b)):
        template = node.split(".", 1)[0]
        if template in common and body(a, steps_a, node, template) != body(b, steps_b, node, template):
            roots.append((node, template))
    return roots


def _merged_principles(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    ids, bodies = {p["id"] for p in a["principles"]}, {canonical(p["rule"]) for p in a["principles"]}
    extra = [p for p in b["principles"] if p["id"] not in ids and canonical(p["rule"]) not in bodies]
    return copy.deepcopy(list(a["principles"]) + extra)


def swap(a: Mapping[str, Any], b: Mapping[str, Any], root: str, template: str) -> SkillDoc:
    """A with the subgraph under ``root`` replaced by B's (module docstring)."""
    removed, _ = _subgraph(a, root, template)
    added, _ = _subgraph(b, root, template)
    nodes = [n for n in a["graph"]["nodes"] if n["id"] not in removed]
    nodes += [n for n in b["graph"]["nodes"] if n["id"] in added]
    edges = []
    for edge in a["graph"]["edges"]:
        if edge["src"] in removed:
            continue
        if root == START and edge["src"] == START and edge.get("template") == template:
            edge = {**next(e for e in b["graph"]["edges"] if e["src"] == START and e.get("template") == template)}
        edges.append(edge)
    edges += [e for e in b["graph"]["edges"] if e["src"] in added]
    return {"principles": _merged_principles(a, b), "graph": copy.deepcopy({"nodes": nodes, "edges": edges})}


def crossover(a: Mapping[str, Any], a_id: str, b: Mapping[str, Any], b_id: str,
              rng: random.Random) -> Offspring | None:
    """A child of A and B (module docstring); None when it would equal A."""
    roots = shared_roots(a, b)
    if roots:
        root, template = roots[rng.randrange(len(roots))]
        child = swap(a, b, root, template)
        where = f"{template} procedure" if root == START else f"subgraph at {root}"
        op, why = f"{CROSSOVER}:{'template' if root == START else 'subgraph'}", f"{where} from the second parent"
    else:
        child = {"principles": _merged_principles(a, b), "graph": copy.deepcopy(dict(a["graph"]))}
        op, why = f"{CROSSOVER}:principles", "principles of the second parent added"
    if canonical(child) == canonical(a):
        return None
    return Offspring(child, op, (a_id, b_id), why)

