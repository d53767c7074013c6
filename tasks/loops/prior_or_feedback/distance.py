"""The protocol's measures on configs and histories: the normalised config distance, the
rank of a config's score in a pool, and the score permutation of intervention (c).

Distance over CONFIG_SPACE (suites/pde1d/space.py), the mean over its P parameters of a
per-parameter distance in [0, 1]:

    float-log  |log10 a - log10 b| / (log10 high - log10 low)
    float, int |a - b| / (high - low)
    categorical 0 if a == b else 1

so it lies in [0, 1] and one categorical change alone is 1/P (1/6 on pde1d: the paper's
"+0.085, about one categorical change" is on its own scale, which it does not give)."""

from __future__ import annotations

import math
import random
from typing import Sequence


def param_distance(kind: str, bounds: tuple, a, b) -> float:
    """One parameter's normalised distance in [0, 1]."""
    if kind == "categorical":
        return 0.0 if a == b else 1.0
    low, high = bounds
    if kind == "float-log":
        return abs(math.log10(a) - math.log10(b)) / (math.log10(high) - math.log10(low))
    return abs(a - b) / (high - low)


def config_distance(space: Sequence[tuple[str, str, tuple]], a: dict, b: dict) -> float:
    """The mean per-parameter normalised distance of two configs inside ``space``."""
    return sum(param_distance(kind, bounds, a[p], b[p]) for p, kind, bounds in space) / len(space)


def rank_in_pool(value: float, pool: Sequence[float]) -> tuple[int, float]:
    """(rank, fraction): 1 + how many pool scores are strictly lower (better) than
    ``value``, and that count over the pool's size (0.0: better than the whole pool)."""
    better = sum(p < value for p in pool)
    return 1 + better, better / len(pool)


def permuted(values: Sequence[float], seed: object) -> list[float]:
    """``values`` shuffled among their positions by a seeded RNG, never left as they were
    when two of them differ (a reshuffle until some value moves)."""
    values = list(values)
    if len(set(values)) < 2:
        return values
    rng = random.Random(str(seed))
    while True:
        out = values[:]
        rng.shuffle(out)
        if out != values:
            return out
