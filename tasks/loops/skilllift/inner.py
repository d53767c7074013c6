"""SkillLift's inner loop on toolsim: the rubric is frozen and skills (rule sets) are
revised against it by mutation and hill climbing, with zero simulator calls. Pure; the
only randomness is the caller's ``random.Random``.

The mutation catalogue is fixed per run from the initial skill's real runs: every rule
the rule proposer (``tasks.proposers.rules``) derives from their failures, plus a
retry-on-any-tool rule for every toolsim error code (rules a text-only reader finds
thorough, whether or not they help). Operators on a rule set:

- ``add``: append a catalogue rule the set does not hold (by id);
- ``remove``: drop one rule;
- ``retry_max``: set one retry rule's ``max`` to another value in 1..5;
- ``widen``: turn one ``on_error`` rule for a named tool into one for every tool.

Hill climbing: from the start skill, each of ``iterations`` steps proposes
``proposals`` mutations of the current skill, scores them with the rubric and moves to
the best when it scores higher (first in proposal order on ties). Every distinct skill
visited is returned with its rubric score (the round's ``skills`` rows).

Departures from the paper: no model rewrites skill text (``proposer: llm`` revises with
a chat endpoint instead of these operators, ``tasks/loops/skilllift/llm.py``); TPE is
not built.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from schemas.ids import content_id
from suites.toolsim.harness import HarnessError, parse_harness
from tasks.harness_loops.catalogue import rule_catalogue
from tasks.harness_loops.documents import harness_source
from tasks.loops.skilllift.rubric import rubric_score
from tasks.proposers.rule_evidence import Trace

OPERATORS = ("add", "remove", "retry_max", "widen")
MAX_RETRIES = 5
ATTEMPTS = 8
"""Draws of an operator before a proposal gives up (an operator may not apply)."""

Document = dict[str, Any]
Reviser = Callable[[Document, random.Random], tuple[Document, str] | None]
"""(document, rng) -> (revised document, operator) or None: one proposal of the inner loop."""


@dataclass(frozen=True)
class Visited:
    """One skill the inner loop scored."""

    skill_id: str
    document: Document
    parent: str
    operator: str
    rubric_score: float
    step: int


def skill_id(document: Mapping[str, Any]) -> str:
    """The sha256 of the skill's harness program: its candidate id."""
    return content_id(harness_source(document))


def catalogue(traces: Sequence[Trace], seed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's mutation catalogue (``harness_loops.catalogue.rule_catalogue``)."""
    return rule_catalogue(traces, seed)


def _edited(op: str, rules: list, catalogue: Sequence, rng: random.Random) -> bool:
    """Apply ``op`` to ``rules`` in place; False when it does not apply."""
    if op == "add":
        held = {r.get("id") for r in rules}
        pool = [r for r in catalogue if r["id"] not in held]
        if pool:
            rules.append(copy.deepcopy(rng.choice(pool)))
        return bool(pool)
    if op == "remove":
        if rules:
            del rules[rng.randrange(len(rules))]
        return bool(rules)
    if op == "retry_max":
        retry = [r for r in rules if "retry" in r["action"]]
        if not retry:
            return False
        rule = rng.choice(retry)
        rule["action"]["retry"]["max"] = rng.choice([m for m in range(1, MAX_RETRIES + 1)
                                                     if m != rule["action"]["retry"]["max"]])
        return True
    named = [r for r in rules if r["trigger"].get("tool", "*") != "*" and "on_error" in r["trigger"]]
    if named:
        rng.choice(named)["trigger"]["tool"] = "*"
    return bool(named)


def mutate(document: Mapping[str, Any], catalogue: Sequence[Mapping[str, Any]],
           rng: random.Random) -> tuple[Document, str] | None:
    """One mutation of the skill that parses and changes it, with its operator; None
    when ``ATTEMPTS`` draws found none."""
    for _ in range(ATTEMPTS):
        op = rng.choice(OPERATORS)
        edited = copy.deepcopy(dict(document))
        edited.setdefault("rules", [])
        if not _edited(op, edited["rules"], catalogue, rng) or edited == document:
            continue
        try:
            parse_harness(edited)
        except HarnessError:
            continue
        return edited, op
    return None


def rubric_scorer(rubric: Sequence[Mapping[str, Any]]) -> Callable[[Mapping[str, Any]], float]:
    return lambda document: rubric_score(rubric, document)


def hill_climb(start: Mapping[str, Any], score_of: Callable[[Mapping[str, Any]], float], revise: Reviser,
               iterations: int, proposals: int, rng: random.Random) -> list[Visited]:
    """Every distinct skill the climb scored (the start first, as step 0). ``score_of``
    is the frozen rubric (``rubric_scorer``); the findings' baseline passes real runs."""
    current = Visited(skill_id(start), dict(start), "", "start", score_of(start), 0)
    visited = {current.skill_id: current}
    for step in range(1, iterations + 1):
        best = None
        for _ in range(proposals):
            revised = revise(current.document, rng)
            if revised is None:
                continue
            document, op = revised
            sid = skill_id(document)
            seen = visited.get(sid) or Visited(sid, document, current.skill_id, op, score_of(document), step)
            visited.setdefault(sid, seen)
            if best is None or seen.rubric_score > best.rubric_score:
                best = seen
        if best is not None and best.rubric_score > current.rubric_score:
            current = best
    return list(visited.values())


def top_k(visited: Sequence[Visited], k: int, exclude: set[str]) -> list[Visited]:
    """The ``k`` best-scored skills not in ``exclude`` (ties: earlier step, then id)."""
    pool = [v for v in visited if v.skill_id not in exclude]
    return sorted(pool, key=lambda v: (-v.rubric_score, v.step, v.skill_id))[:k]


def rule_reviser(catalogue: Sequence[Mapping[str, Any]]) -> Reviser:
    """The non-LLM reviser: one catalogue mutation."""
    return lambda document, rng: mutate(document, catalogue, rng)
