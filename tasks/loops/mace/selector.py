"""Which units each role gets, in which form, and how the feedback updates MemGoG (pure).

sample: a role's *candidate sets* are subsets of its relevant units (role matches, the
request's template is among the unit's templates) of at most ``budget`` units, without a
high-risk unit (observed ``min_obs`` times and utility below ``risk_floor``) and without a
conflicting pair (conflict weight above support weight by more than ``conflict_margin``),
ranked by utility plus pairwise support; the top ``max_sets`` are kept, and the empty set
comes last. An arm is a (set, form) pair; the empty set has the one form ``none``.

- ``joint``: Thompson sampling over the (set, form) arms, one Beta posterior per pair.
- ``factorised``: one Thompson bandit over sets and one over forms per role, each with its
  own posterior (the paper's baseline: unit and form scored separately).
- ``greedy=True``: either selector with posterior means in place of draws (ties: the
  first arm in rank order); used on the select and test splits.

gate/register feedback (``update``): per episode of return y in {0, 1}, every injected
unit's utility moves to ``(1 - smoothing) * u + smoothing * y``; every co-injected pair's
support weight to y and conflict weight to 1 - y the same way; the chosen arms count y.
Paper: budget, smoothing and risk rule are not specified (parameters here).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Sequence

from tasks.loops.mace.forms import FORMS, NONE
from tasks.loops.mace.memory import ROLES, Memory, pair_key

SELECTORS = ("joint", "factorised")
MAX_POOL = 6
"""Relevant units considered per role (the best by utility), which bounds the subsets."""


@dataclass(frozen=True)
class Limits:
    budget: int = 2
    max_sets: int = 4
    risk_floor: float = 0.2
    min_obs: int = 4
    conflict_margin: float = 0.3


@dataclass(frozen=True)
class Injection:
    role: str
    units: tuple[str, ...]
    form: str

    @property
    def set_key(self) -> str:
        return set_key(self.units)


def set_key(units: Sequence[str]) -> str:
    return "+".join(u[:10] for u in sorted(units)) or "-"


def _weight(memory: Memory, a: str, b: str, kind: str) -> float:
    return memory.relations.get(pair_key(a, b, kind), 0.0)


def candidate_sets(memory: Memory, role: str, template: str, limits: Limits) -> list[tuple[str, ...]]:
    """The role's candidate unit sets for a request of ``template`` (module docstring)."""
    def risky(uid: str) -> bool:
        return memory.n_obs.get(uid, 0) >= limits.min_obs and memory.utility[uid] < limits.risk_floor

    pool = sorted((u.unit_id for u in memory.units.values()
                   if u.role == role and template in u.templates and not risky(u.unit_id)),
                  key=lambda uid: (-memory.utility[uid], uid))[:MAX_POOL]
    scored = []
    for size in range(1, limits.budget + 1):
        for subset in itertools.combinations(sorted(pool), size):
            pairs = list(itertools.combinations(subset, 2))
            if any(_weight(memory, a, b, "conflict") - _weight(memory, a, b, "support") > limits.conflict_margin
                   for a, b in pairs):
                continue
            score = sum(memory.utility[u] for u in subset) + sum(_weight(memory, a, b, "support") for a, b in pairs)
            scored.append((-score, set_key(subset), subset))
    return [s for _, _, s in sorted(scored)[:limits.max_sets]] + [()]


def arms_of(sets: Sequence[tuple[str, ...]]) -> list[tuple[tuple[str, ...], str]]:
    return [(s, form) for s in sets for form in (FORMS if s else (NONE,))]


def _counts(memory: Memory, key: str) -> tuple[float, float]:
    alpha, beta = memory.arms.get(key, (0.0, 0.0))
    return alpha, beta


def joint_key(role: str, units: Sequence[str], form: str) -> str:
    return f"joint|{role}|{set_key(units)}|{form}"


def _draw(memory: Memory, key: str, rng: random.Random | None) -> float:
    alpha, beta = _counts(memory, key)
    return rng.betavariate(1 + alpha, 1 + beta) if rng is not None else (1 + alpha) / (2 + alpha + beta)


def _best(options: Sequence, values: Sequence[float]):
    return options[max(range(len(options)), key=lambda i: (values[i], -i))]


def choose(memory: Memory, role: str, sets: Sequence[tuple[str, ...]], selector: str,
           rng: random.Random, greedy: bool = False) -> Injection:
    """One role's (set, form) by ``selector``; ``greedy`` draws nothing from ``rng``."""
    rng = None if greedy else rng
    if selector == "factorised":
        units = _best(list(sets), [_draw(memory, f"set|{role}|{set_key(s)}", rng) for s in sets])
        form = _best(list(FORMS), [_draw(memory, f"form|{role}|{f}", rng) for f in FORMS]) if units else NONE
        return Injection(role, tuple(units), form)
    arms = arms_of(sets)
    draws = [_draw(memory, joint_key(role, s, f), rng) for s, f in arms]
    units, form = _best(arms, draws)
    return Injection(role, tuple(units), form)


def select(memory: Memory, template: str, selector: str, limits: Limits, rng: random.Random,
           greedy: bool = False) -> list[Injection]:
    """sample: every role's injection for one request, in pipeline order."""
    return [choose(memory, role, candidate_sets(memory, role, template, limits), selector, rng, greedy)
            for role in ROLES]


def update(memory: Memory, episodes: Sequence[tuple[Sequence[Injection], float]], smoothing: float) -> Memory:
    """The feedback update over ``(injections, return)`` episodes, in order (docstring)."""
    out = memory.copy()

    def smooth(table: dict, key: str, target: float, start: float) -> None:
        table[key] = (1 - smoothing) * table.get(key, start) + smoothing * target

    def count(key: str, y: float) -> None:
        alpha, beta = out.arms.get(key, [0.0, 0.0])
        out.arms[key] = [alpha + y, beta + 1 - y]

    for injections, y in episodes:
        used = sorted({u for inj in injections for u in inj.units})
        for uid in used:
            smooth(out.utility, uid, y, out.utility[uid])
            out.n_obs[uid] = out.n_obs.get(uid, 0) + 1
        for a, b in itertools.combinations(used, 2):
            smooth(out.relations, pair_key(a, b, "support"), y, 0.0)
            smooth(out.relations, pair_key(a, b, "conflict"), 1 - y, 0.0)
        for inj in injections:
            count(joint_key(inj.role, inj.units, inj.form), y)
            count(f"set|{inj.role}|{inj.set_key}", y)
            if inj.units:
                count(f"form|{inj.role}|{inj.form}", y)
    return out
