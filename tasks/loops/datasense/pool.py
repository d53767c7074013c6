"""The data pool and the selectors, pure. A pool is arith training rows (prompt, target)
of varied difficulty with defects planted on purpose: wrong labels (another problem's
answer), duplicates of earlier rows, and off-task rows (an answer of another category).
What a row *is* stays hidden from the selectors: they see prompt and target text and the
frozen base model's loss on each row (forward passes only), and each splits the pool into
equal disjoint groups with a predicted ranking (rank 1 = the group it expects to help most)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from suites.arith.tasks import generate


@dataclass(frozen=True)
class Row:
    row_id: int
    category: str
    prompt: str
    target: str
    defect: str
    """"clean", "wrong_label", "duplicate" or "off_task": hidden from every selector."""


@dataclass(frozen=True)
class Submission:
    selector: str
    groups: tuple[tuple[int, ...], ...]
    """Row ids per group, disjoint, equal sizes."""
    predicted_rank: tuple[int, ...]
    """Rank of each group (1 = predicted best)."""


def build_pool(categories: Sequence[str], size: int, shares: dict[str, float], seed: int,
               style: str = "worked") -> list[Row]:
    """``size`` rows over ``categories``; a seeded share of rows per defect."""
    rng = random.Random(f"datasense:{seed}")
    per = -(-size // len(categories))
    problems = {c: generate(c, 2 * per, seed, "train") for c in categories}
    rows: list[Row] = []
    for i in range(size):
        category = categories[i % len(categories)]
        problem = problems[category][i // len(categories)]
        defect, target = _defect(rng, shares), problem.target(style)
        if defect == "wrong_label":
            target = problems[category][per + rng.randrange(per)].target(style)
        elif defect == "off_task":
            other = rng.choice([c for c in categories if c != category] or [category])
            target = problems[other][per + rng.randrange(per)].target(style)
        elif defect == "duplicate" and rows:
            source = rows[rng.randrange(len(rows))]
            rows.append(Row(i, source.category, source.prompt, source.target, "duplicate"))
            continue
        rows.append(Row(i, category, problem.prompt, target, "clean" if defect == "duplicate" else defect))
    return rows


def _defect(rng: random.Random, shares: dict[str, float]) -> str:
    u = rng.random()
    for defect in ("wrong_label", "duplicate", "off_task"):
        if u < shares[defect]:
            return defect
        u -= shares[defect]
    return "clean"


def equal_groups(order: Sequence[int], n_groups: int) -> tuple[tuple[int, ...], ...]:
    """Consecutive equal slices of ``order`` (its length must divide by ``n_groups``)."""
    if len(order) % n_groups:
        raise ValueError(f"a pool of {len(order)} rows does not split into {n_groups} equal groups")
    size = len(order) // n_groups
    return tuple(tuple(order[g * size:(g + 1) * size]) for g in range(n_groups))


def by_score(rows: Sequence[Row], score: Callable[[Row], float], n_groups: int, selector: str) -> Submission:
    """Groups of rows sorted by ``score`` descending (ties by row id); the highest-scored
    group predicted best."""
    order = [r.row_id for r in sorted(rows, key=lambda r: (-score(r), r.row_id))]
    return Submission(selector, equal_groups(order, n_groups), tuple(range(1, n_groups + 1)))


def select(selector: str, rows: Sequence[Row], losses: dict[int, float], n_groups: int, seed: int) -> Submission:
    """One selector's submission. ``random``: a seeded shuffle, ranks in draw order;
    ``loss``: lowest base loss first (clean, learnable rows); ``length``: longest target
    first (most supervised tokens); ``dedup_difficulty``: repeated (prompt, target) pairs
    last, then longest prompt first; ``mixed``: the mean of the three signals' z-scores."""
    if selector == "random":
        order = [r.row_id for r in rows]
        random.Random(f"datasense-random:{seed}").shuffle(order)
        return Submission(selector, equal_groups(order, n_groups), tuple(range(1, n_groups + 1)))
    signals = {"loss": lambda r: -losses[r.row_id], "length": lambda r: float(len(r.target)),
               "dedup_difficulty": _dedup_difficulty(rows)}
    if selector in signals:
        return by_score(rows, signals[selector], n_groups, selector)
    if selector == "mixed":
        z = {name: _zscores(rows, fn) for name, fn in signals.items()}
        return by_score(rows, lambda r: sum(z[name][r.row_id] for name in signals) / len(signals), n_groups, selector)
    raise ValueError(f"unknown selector {selector!r}; known: random, loss, length, dedup_difficulty, mixed")


def _dedup_difficulty(rows: Sequence[Row]) -> Callable[[Row], float]:
    seen: dict[tuple[str, str], int] = {}
    repeat = {}
    for r in rows:
        key = (r.prompt, r.target)
        repeat[r.row_id] = key in seen
        seen.setdefault(key, r.row_id)
    return lambda r: (0.0 if repeat[r.row_id] else 1000.0) + len(r.prompt)


def _zscores(rows: Sequence[Row], fn: Callable[[Row], float]) -> dict[int, float]:
    values = np.array([fn(r) for r in rows], dtype=float)
    spread = values.std() or 1.0
    return {r.row_id: float((v - values.mean()) / spread) for r, v in zip(rows, values)}


def check_submission(submission: Submission, rows: Sequence[Row], n_groups: int) -> str | None:
    """Why a submission is invalid (not n equal disjoint groups covering the pool, or a
    ranking that is not a permutation of 1..n), or None."""
    ids = [i for group in submission.groups for i in group]
    if len(submission.groups) != n_groups or len({len(g) for g in submission.groups}) != 1:
        return f"needs {n_groups} groups of equal size"
    if sorted(ids) != sorted(r.row_id for r in rows):
        return "groups must be disjoint and cover the pool"
    if sorted(submission.predicted_rank) != list(range(1, n_groups + 1)):
        return f"predicted ranks must be a permutation of 1..{n_groups}"
    return None
