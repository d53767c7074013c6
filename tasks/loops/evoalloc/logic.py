"""EvoAlloc's allocator, pure: the policy as data, the decision rule, counterfactual
draws, experience from supporting and refuting cases, and the shadow acceptance rule.

Deviations from the paper (2610.12086v1): the policy is a threshold rule set (parent
percentile, partial score vs the parent's), not LM-read text; the reviser refits the
thresholds on the cases instead of an LM rewriting the policy; a revision is triggered by
`revise_every` full results and shadow-tested on `shadow_window` candidates (the paper
leaves both unspecified); on disagreement the candidate is evaluated at the higher level,
so both policies are judged on real results."""

from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass, replace
from typing import Sequence

LEVELS = ("discard", "partial", "full")
DISCARD_GRID = (0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75)
"""The thresholds a revision may pick for `discard_below` (capped: some children always
get evaluated)."""

@dataclass(frozen=True)
class AllocPolicy:
    discard_below: float
    """Discard a child whose parent's percentile is below this."""
    full_above: float
    """Full at once when the parent's percentile is above this (1: never at once)."""
    promote_at: float
    """Partial -> Full when partial score - parent's partial score >= this (0: a child at
    least as good as its parent on the partial cases)."""

    def code(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_code(cls, code: str) -> "AllocPolicy":
        return cls(**json.loads(code))


@dataclass(frozen=True)
class AllocCase:
    """One allocated child as the reviser and the shadow rule see it."""

    candidate_id: str
    parent_pct: float
    partial_delta: float | None
    """Partial score minus the parent's partial score; None when never partial-scored."""
    new_best: bool | None
    """Whether its full score beat every earlier full score; None when never full-evaluated."""


def percentile(value: float, pool: Sequence[float]) -> float:
    """Where `value` (a member of `pool`) ranks: 0 the worst, 1 the best; a pool of one is 1."""
    if len(pool) <= 1:
        return 1.0
    return (sum(s <= value for s in pool) - 1) / (len(pool) - 1)


def decide(policy: AllocPolicy, parent_pct: float, has_partial: bool) -> str:
    """The decision rule: discard | partial | full (no Partial level: full)."""
    if parent_pct < policy.discard_below:
        return "discard"
    if parent_pct > policy.full_above or not has_partial:
        return "full"
    return "partial"


def promotes(policy: AllocPolicy, partial_delta: float) -> bool:
    return partial_delta >= policy.promote_at


def counterfactual(seed: int, rate: float) -> bool:
    """Whether a would-be discard is full-evaluated anyway (one seeded draw)."""
    return random.Random(seed).random() < rate


def path(policy: AllocPolicy, case: AllocCase, has_partial: bool) -> tuple[int, bool]:
    """(evaluations the policy spends on the case, whether it reaches Full)."""
    level = decide(policy, case.parent_pct, has_partial)
    if level == "discard":
        return 0, False
    if level == "full":
        return 1, True
    if case.partial_delta is None:
        raise ValueError(f"case {case.candidate_id[:12]} has no partial score; a Partial path needs one")
    up = promotes(policy, case.partial_delta)
    return 1 + int(up), up


def shadow_level(policies: Sequence[AllocPolicy], parent_pct: float, has_partial: bool) -> str:
    """The level a candidate is first evaluated at when policies disagree: the highest."""
    return max((decide(p, parent_pct, has_partial) for p in policies), key=LEVELS.index)


def missed(policy: AllocPolicy, case: AllocCase, has_partial: bool) -> bool:
    """A new best the policy would not have full-evaluated."""
    return bool(case.new_best) and not path(policy, case, has_partial)[1]


def split_cases(policy: AllocPolicy, cases: Sequence[AllocCase], has_partial: bool) -> tuple[list[str], list[str]]:
    """(supporting, refuting) ids among the full-evaluated cases: a case supports the
    policy when reaching Full and being a new best coincide, else it refutes it (a missed
    new best, or a Full spent on no new best)."""
    supporting, refuting = [], []
    for c in cases:
        if c.new_best is None:
            continue
        agree = path(policy, c, has_partial)[1] == c.new_best
        (supporting if agree else refuting).append(c.candidate_id)
    return supporting, refuting


def revise(policy: AllocPolicy, cases: Sequence[AllocCase], has_partial: bool) -> tuple[AllocPolicy, str]:
    """A new policy from the full-evaluated cases (counterfactuals included) and its note.
    discard_below: the highest grid threshold that discards no observed new best (no new
    best seen: one grid step above the current). promote_at: the lowest partial delta of an
    observed new best (floored to 1e-6), so every one of them is still promoted."""
    known = [c for c in cases if c.new_best is not None]
    bests = [c for c in known if c.new_best]
    if bests:
        floor = min(c.parent_pct for c in bests)
        discard_below = max(t for t in DISCARD_GRID if t <= floor)
    else:
        discard_below = min([t for t in DISCARD_GRID if t > policy.discard_below] or [DISCARD_GRID[-1]])
    deltas = [c.partial_delta for c in bests if c.partial_delta is not None]
    promote_at = math.floor(min(deltas) * 1e6) / 1e6 if has_partial and deltas else policy.promote_at
    new = replace(policy, discard_below=discard_below, promote_at=promote_at)
    supporting, refuting = split_cases(policy, known, has_partial)
    note = (f"{len(supporting)} supporting, {len(refuting)} refuting of {len(known)} full results "
            f"({len(bests)} new bests, lowest parent percentile "
            f"{min((c.parent_pct for c in bests), default=float('nan')):.3f}): "
            f"discard_below {policy.discard_below} -> {new.discard_below}, "
            f"promote_at {policy.promote_at} -> {new.promote_at}")
    return new, note


def shadow_accept(old: AllocPolicy, new: AllocPolicy, cases: Sequence[AllocCase], has_partial: bool) -> tuple[bool, dict]:
    """The shadow acceptance rule: on the same real results, fewer missed new bests first,
    then fewer Full + Partial evaluations; the new policy replaces the old only if strictly better."""
    stats = {
        "missed_best_old": sum(missed(old, c, has_partial) for c in cases),
        "missed_best_new": sum(missed(new, c, has_partial) for c in cases),
        "evals_old": sum(path(old, c, has_partial)[0] for c in cases),
        "evals_new": sum(path(new, c, has_partial)[0] for c in cases),
        "disagreements": sum(path(old, c, has_partial) != path(new, c, has_partial) for c in cases),
    }
    accept = (stats["missed_best_new"], stats["evals_new"]) < (stats["missed_best_old"], stats["evals_old"])
    return accept, stats


def evals_to_target(curve: Sequence[tuple[int, float]], target: float) -> int | None:
    """Full evaluations spent when the best full score first reaches `target`; `curve` is
    (full evaluations so far, best so far) after each full evaluation. None: never."""
    return next((n for n, best in curve if best >= target), None)
