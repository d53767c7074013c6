"""Paired statistics over cases: the evidence a gate weighs."""

from __future__ import annotations

import math
from typing import Mapping, Sequence

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


def paired_differences(
    candidate: Mapping[str, float], baseline: Mapping[str, float]
) -> tuple[list[str], list[float]]:
    """The cases (sorted) and candidate − baseline on each.

    Both sides must score exactly the same cases: a case scored on one side only is not
    paired evidence, and the error names it."""
    only_candidate = sorted(set(candidate) - set(baseline))
    only_baseline = sorted(set(baseline) - set(candidate))
    if only_candidate or only_baseline:
        raise ValueError(
            f"evidence is not paired: cases only on the candidate side {only_candidate[:5]}, "
            f"only on the baseline side {only_baseline[:5]}; score both sides on the same cases"
        )
    cases = sorted(candidate)
    return cases, [candidate[c] - baseline[c] for c in cases]


def unpaired_bootstrap_ci(
    sample: Sequence[float], reference: Sequence[float], confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of mean(sample) − mean(reference), each side resampled on
    its own (no pairing). Either side empty gives (nan, nan)."""
    a, b = np.asarray(sample, dtype=float), np.asarray(reference, dtype=float)
    if a.size == 0 or b.size == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    diffs = (a[rng.integers(0, a.size, size=(resamples, a.size))].mean(axis=1)
             - b[rng.integers(0, b.size, size=(resamples, b.size))].mean(axis=1))
    tail = (1.0 - confidence) / 2.0
    return (float(np.quantile(diffs, tail)), float(np.quantile(diffs, 1.0 - tail)))


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties; nan when one side is constant)."""
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _ranks(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    order = v.argsort(kind="stable")
    ranks = np.empty(len(v))
    ranks[order] = np.arange(1, len(v) + 1)
    for value in np.unique(v):  # ties share their mean rank
        ranks[v == value] = ranks[v == value].mean()
    return ranks


def kendall(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b (ties on either side corrected; nan when one side is constant or
    there are fewer than two items)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    i, j = np.triu_indices(x.size, k=1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    untied_x, untied_y = np.count_nonzero(dx), np.count_nonzero(dy)
    if untied_x == 0 or untied_y == 0:
        return float("nan")
    return float((dx * dy).sum() / math.sqrt(untied_x * untied_y))


def rank_corr_ci(a: Sequence[float], b: Sequence[float], method: str = "kendall", confidence: float = 0.95,
                 resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of a rank correlation (``kendall`` or ``spearman``),
    resampling the paired items; resamples where one side is constant are dropped
    (nan, nan when every one is)."""
    corr = {"kendall": kendall, "spearman": spearman}[method]
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size < 2:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    draws = [corr(x[k], y[k]) for k in rng.integers(0, x.size, size=(resamples, x.size))]
    kept = np.asarray([d for d in draws if not math.isnan(d)])
    if kept.size == 0:
        return (math.nan, math.nan)
    tail = (1.0 - confidence) / 2.0
    return (float(np.quantile(kept, tail)), float(np.quantile(kept, 1.0 - tail)))
