"""SkillLift's outer-loop calibration: how well the rubric's ranking of the executed
skills agrees with their real ranking (Kendall tau-b, its bootstrap CI over the skills,
and Spearman), and the refit of the rubric's weights over every skill executed so far.
Pure; no I/O.

The refit's target is the ranking, not the absolute scores (``pairwise``): a logistic
loss on w . (x_a - x_b) for every pair of executed skills whose real scores differ (a
better than b), with an L2 pull towards the current weights (few pairs, so the prior
matters). Ablations: ``regression`` (ridge least squares of the real score on the item
scores, the same pull) and ``off`` (the rubric stays frozen).

Departures from the paper: the calibrator is not a model that reads both rankings and
edits items by hand; it refits weights, and new items come from the failed events of
the executed skills (``rubric.extend_rubric``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from tasks.gate.stats import kendall, rank_corr_ci, spearman
from tasks.loops.skilllift.rubric import Rubric, item_scores

CALIBRATIONS = ("pairwise", "regression", "off")
STEPS = 300
LEARNING_RATE = 0.5


@dataclass(frozen=True)
class Agreement:
    n_cands: int
    kendall: float
    ci_low: float
    ci_high: float
    spearman: float


def agreement(real: Sequence[float], rubric: Sequence[float], seed: int = 0) -> Agreement:
    """Rank agreement of the rubric's scores with the real scores of the same skills."""
    low, high = rank_corr_ci(real, rubric, "kendall", seed=seed)
    return Agreement(len(real), kendall(real, rubric), low, high, spearman(real, rubric))


def pairwise_weights(features: np.ndarray, real: np.ndarray, prior: np.ndarray, l2: float) -> np.ndarray:
    """Weights minimising mean_pairs log(1 + exp(-w . (x_a - x_b))) + l2/2 |w - prior|^2
    over pairs with real_a > real_b; the prior when no pair differs. features: (n, m)."""
    a, b = np.nonzero(real[:, None] > real[None, :])
    if a.size == 0:
        return prior.copy()
    diffs = features[a] - features[b]  # (pairs, m)
    w = prior.copy()
    for _ in range(STEPS):
        margin = diffs @ w
        grad = -(diffs * (1.0 / (1.0 + np.exp(margin)))[:, None]).mean(axis=0) + l2 * (w - prior)
        w = w - LEARNING_RATE * grad
    return w


def regression_weights(features: np.ndarray, real: np.ndarray, prior: np.ndarray, l2: float) -> np.ndarray:
    """Ridge least squares of the centred real scores on the centred item scores,
    pulled towards the prior: prior + (X'X + l2 I)^-1 X'(y - X prior)."""
    x = features - features.mean(axis=0)
    y = real - real.mean()
    m = x.shape[1]
    return prior + np.linalg.solve(x.T @ x + l2 * np.eye(m), x.T @ (y - x @ prior))


def refit(rubric: Rubric, features: Sequence[Sequence[float]], real: Sequence[float], method: str,
          l2: float) -> Rubric:
    """The rubric with its weights refit on (item scores, real score) of every executed
    skill; ``off`` returns it unchanged."""
    if method not in CALIBRATIONS:
        raise ValueError(f"skilllift.calibrate must be one of {CALIBRATIONS}, got {method!r}")
    if method == "off" or len(real) < 2:
        return [dict(item) for item in rubric]
    x, y = np.asarray(features, dtype=float), np.asarray(real, dtype=float)
    prior = np.asarray([item["weight"] for item in rubric], dtype=float)
    fit = pairwise_weights if method == "pairwise" else regression_weights
    weights = fit(x, y, prior, l2)
    return [{**item, "weight": round(float(w), 6)} for item, w in zip(rubric, weights)]


def executed_features(rubric: Rubric, documents: Mapping[str, Mapping],
                      real: Mapping[str, float]) -> tuple[list[list[float]], list[float]]:
    """(item scores under ``rubric``, real score) of every executed skill, in id order."""
    ids = sorted(real)
    return [item_scores(rubric, documents[i]) for i in ids], [real[i] for i in ids]
