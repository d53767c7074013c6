"""Paired statistics over cases: the evidence a gate weighs."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def paired_bootstrap_ci(
    differences: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean paired difference (candidate − baseline).

    One case gives a degenerate interval at its difference; no cases give (nan, nan)."""
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(resamples, d.size))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    return (float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail)))


def sign_test_p(differences: Sequence[float], tol: float = 0.0) -> float:
    """Two-sided exact sign test p-value; ties (|d| <= tol) are dropped."""
    wins = sum(d > tol for d in differences)
    losses = sum(d < -tol for d in differences)
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    p = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2.0 * p)
