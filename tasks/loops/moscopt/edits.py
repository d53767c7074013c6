"""MOSCOPT's three edit stages (Algorithm 1) and the EditAdam stand-in. Pure; the only
randomness is the caller's ``random.Random``.

- stage 1 (``skill_edit``), G fixed: one local edit of one skill loaded on a failing
  episode: ``add_rule`` (a catalogue rule the bundle lacks), ``remove_rule``,
  ``retry_max`` (another ``max`` for one retry rule), ``add_plan`` / ``drop_plan`` (a
  catalogue plan skill in or out of the bundle);
- stage 2 (``gating_edit``), skills fixed: from a mis-selection (a failing episode of
  template t): ``promote`` a skill G did not load for t above the loaded ones, or
  ``demote`` a loaded one below every other;
- stage 3 (``pool_edit``), periodic: ``eliminate`` the skill with the lowest success
  rate, ``combine`` two skills into their union, ``breed`` a child of half of each.

EditAdam's dual state (``Memory``), as the spec's offline stand-in: the short-term
record of rejected edits (a tabu set of edit keys: an edit once rejected is not proposed
again) and the long-term revision experience (a per-operator EMA of acceptance that
weights which operator is drawn next). It is text-revision state, not numeric Adam.

Departures from the paper: no model writes the edits offline (``proposer: llm`` asks a
chat endpoint with the prompts in ``tasks/proposers/prompts/moscopt_*.txt``); the
stage schedule and the stage-3 period are not given by the paper (``schedule``).
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from schemas.ids import content_id
from tasks.loops.moscopt.pool import State, bundle_id, drop_skill, replace_skill, summarised, with_score

STAGE_OPERATORS = {
    1: ("add_rule", "remove_rule", "retry_max", "add_plan", "drop_plan"),
    2: ("promote", "demote"),
    3: ("eliminate", "combine", "breed"),
}
EMA = 0.3
PRIOR = 0.5
DRAWS = 12
"""Draws before a stage gives up (an operator may not apply, or every edit is tabu)."""


@dataclass(frozen=True)
class Edit:
    """One proposed edit and the state it makes."""

    stage: int
    operator: str
    target: str
    """The skill id edited (stages 1, 3) or ``template:skill`` (stage 2)."""
    diff: str
    state: State
    parents: tuple[str, ...] = ()
    """The skills a new skill was made from (its ``skills.parents``)."""

    @property
    def key(self) -> str:
        """What the tabu list remembers: the edit's stage, operator and the state it makes."""
        return content_id(f"{self.stage}|{self.operator}|{self.target}|{self.state.state_id()}")


@dataclass
class Memory:
    """EditAdam's dual state: rejected edit keys and a per-operator acceptance EMA."""

    rejected: set[str] = field(default_factory=set)
    experience: dict[str, float] = field(default_factory=dict)

    def weight(self, operator: str) -> float:
        return max(self.experience.get(operator, PRIOR), 0.05)

    def record(self, edit: Edit, accepted: bool) -> None:
        if not accepted:
            self.rejected.add(edit.key)
        old = self.experience.get(edit.operator, PRIOR)
        self.experience[edit.operator] = (1 - EMA) * old + EMA * float(accepted)


def schedule(round_index: int, period: int, freeze_gating: bool) -> int:
    """The stage of round ``round_index`` (1-based): stage 3 every ``period`` rounds,
    else stages 1 and 2 alternate (stage 1 only when G is frozen: an ablation)."""
    if period and round_index % period == 0:
        return 3
    return 1 if freeze_gating or round_index % 2 == 1 else 2


@dataclass(frozen=True)
class Failure:
    """A failing episode as the proposers read it: its template and the loaded skills."""

    case_id: str
    template: str
    loaded: tuple[str, ...]


def _skill_edit(op: str, state: State, failures: Sequence[Failure], catalogue: Mapping[str, Any],
                rng: random.Random) -> Edit | None:
    loaded = sorted({s for f in failures for s in f.loaded if s in state.pool}) or sorted(state.pool)
    target = rng.choice(loaded)
    bundle = copy.deepcopy(state.pool[target])
    if op == "add_rule":
        held = {json.dumps(r, sort_keys=True) for r in bundle["rules"]}
        pool = [r for r in catalogue["rules"] if json.dumps(r, sort_keys=True) not in held]
        if not pool:
            return None
        bundle["rules"].append(copy.deepcopy(rng.choice(pool)))
    elif op == "remove_rule" and bundle["rules"]:
        del bundle["rules"][rng.randrange(len(bundle["rules"]))]
    elif op == "retry_max" and any("retry" in r["action"] for r in bundle["rules"]):
        rule = rng.choice([r for r in bundle["rules"] if "retry" in r["action"]])
        rule["action"]["retry"]["max"] = rng.choice([m for m in range(1, 6) if m != rule["action"]["retry"]["max"]])
    elif op == "add_plan":
        held = {s["trigger"]["template"] for s in bundle["skills"]}
        pool = [p for p in catalogue["plans"] if p["trigger"]["template"] not in held]
        if not pool:
            return None
        bundle["skills"].append(copy.deepcopy(rng.choice(pool)))
    elif op == "drop_plan" and bundle["skills"]:
        del bundle["skills"][rng.randrange(len(bundle["skills"]))]
    else:
        return None
    bundle = summarised(bundle)
    return Edit(1, op, target, f"{state.pool[target]['summary']} -> {bundle['summary']}",
                replace_skill(state, target, bundle), (target,))


def _gating_edit(op: str, state: State, failures: Sequence[Failure], k: int, rng: random.Random) -> Edit | None:
    if not failures:
        return None
    failure = rng.choice(sorted(failures, key=lambda f: f.case_id))
    template, loaded = failure.template, state.loaded(failure.template, k)
    scores = state.gating.get(template, {})
    others = [s for s in state.pool if s not in loaded]
    if op == "promote" and others:
        skill = rng.choice(sorted(others))
        score = max(scores.get(s, 0.0) for s in loaded) + 1.0 if loaded else 1.0
    elif op == "demote" and loaded:
        skill = rng.choice(loaded)
        score = min(scores.get(s, 0.0) for s in state.pool) - 1.0
    else:
        return None
    return Edit(2, op, f"{template}:{skill}", f"G[{template}][{skill[:12]}]: {scores.get(skill, 0.0):g} -> {score:g}",
                with_score(state, template, skill, score))


def _rate(stats: Mapping[str, tuple[int, int]], skill: str) -> float:
    """Laplace-smoothed success rate: an unused skill scores 1/2."""
    n, s = stats.get(skill, (0, 0))
    return (s + 1) / (n + 2)


def _pool_edit(op: str, state: State, stats: Mapping[str, tuple[int, int]], max_pool: int,
               rng: random.Random) -> Edit | None:
    ranked = sorted(state.pool, key=lambda s: (_rate(stats, s), s))
    if op == "eliminate":
        if len(ranked) <= 2:
            return None
        worst = ranked[0]
        return Edit(3, op, worst, f"eliminate {state.pool[worst]['name']} (rate {_rate(stats, worst):.3f})",
                    drop_skill(state, worst))
    if len(ranked) < 2 or len(ranked) >= max_pool:
        return None
    a, b = rng.sample(ranked[-3:] if len(ranked) >= 3 else ranked, 2)
    left, right = state.pool[a], state.pool[b]
    if op == "combine":
        rules, skills = left["rules"] + right["rules"], left["skills"] + right["skills"]
    else:
        rules = left["rules"][: (len(left["rules"]) + 1) // 2] + right["rules"][len(right["rules"]) // 2:]
        skills = left["skills"][: (len(left["skills"]) + 1) // 2] + right["skills"][len(right["skills"]) // 2:]
    child = summarised({"name": f"{op[:2]}-{left['name'][:20]}-{right['name'][:20]}", "summary": "",
                        "rules": copy.deepcopy(rules), "skills": copy.deepcopy(skills)})
    if bundle_id(child) in state.pool:
        return None
    grown = replace_skill(state, None, child)
    for template, row in grown.gating.items():
        if a in row or b in row:
            row[bundle_id(child)] = max(row.get(a, 0.0), row.get(b, 0.0))
    return Edit(3, op, bundle_id(child), f"{op} {left['name']} + {right['name']}", grown, (a, b))


def propose(stage: int, state: State, memory: Memory, failures: Sequence[Failure], catalogue: Mapping[str, Any],
            stats: Mapping[str, tuple[int, int]], k: int, max_pool: int, rng: random.Random) -> Edit | None:
    """One edit of ``stage`` that changes the state and is not tabu; the operator drawn
    with the memory's weights. None when ``DRAWS`` draws found none."""
    operators = STAGE_OPERATORS[stage]
    for _ in range(DRAWS):
        op = rng.choices(operators, weights=[memory.weight(o) for o in operators])[0]
        if stage == 1:
            edit = _skill_edit(op, state, failures, catalogue, rng)
        elif stage == 2:
            edit = _gating_edit(op, state, failures, k, rng)
        else:
            edit = _pool_edit(op, state, stats, max_pool, rng)
        if edit is not None and edit.key not in memory.rejected and edit.state.state_id() != state.state_id():
            return edit
    return None


def all_at_once(state: State, memory: Memory, failures: Sequence[Failure], catalogue: Mapping[str, Any],
                stats: Mapping[str, tuple[int, int]], k: int, max_pool: int, rng: random.Random) -> Edit | None:
    """The ablation "edit everything at once": one edit of each stage applied in turn
    (1, 2, 3) to the same state and gated as one."""
    current, parts = state, []
    for stage in (1, 2, 3):
        edit = propose(stage, current, memory, failures, catalogue, stats, k, max_pool, rng)
        if edit is not None:
            current, parts = edit.state, [*parts, edit]
    if not parts:
        return None
    return Edit(0, "+".join(e.operator for e in parts), ",".join(e.target[:12] for e in parts),
                " ; ".join(e.diff for e in parts), current, tuple(p for e in parts for p in e.parents))
