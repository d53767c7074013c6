"""Choosing k of n proposed interventions from an archive of past experiments, and how
good the choice was (Research World Models, 2610.12235).

A record is one executed intervention: its environment, its near-duplicate group, its
feature vector (here: the knob settings of a solver change) and the gain it realised over
the environment's baseline. Predictors map (context records, proposal features) to a
predicted median gain:

- ``prior``: no experience, predicts 0 for every proposal (ties keep proposal order, so
  it picks the first k): the paper's no-experience baseline with the LM taken out;
- ``knn``: the median gain of the ``k`` nearest context records (Euclidean);
- ``ridge``: ridge regression with an unpenalised intercept.

Deviations: the paper's predictors are LMs reading change texts; here the two baselines
it compares them with run on feature vectors and the LM is absent. Leakage rule as in the
paper: the context never holds the target's near-duplicate group (and, cross-environment,
no record of the target's environment).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import median
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)


class Record:
    """One executed intervention."""

    record_id: str
    env_id: str
    group: str
    """Near-duplicate group: records of one group are the same change, nearly."""
    features: tuple[float, ...]
    gain: float


Predictor = Callable[[Sequence[Record], Sequence[float]], float]


def context_for(archive: Sequence[Record], env_id: str, group: str, cross_env: bool) -> list[Record]:
    """The records a predictor may read about a proposal of ``group`` in ``env_id``:
    never its near-duplicate group; cross-environment, only other environments'."""
    return [r for r in archive if r.group != group and (r.env_id != env_id if cross_env else r.env_id == env_id)]


def predict_prior(context: Sequence[Record], features: Sequence[float]) -> float:
    """No experience: every proposal is predicted to gain 0."""
    return 0.0


def predict_knn(context: Sequence[Record], features: Sequence[float], k: int = 3) -> float:
    """Median gain of the ``k`` nearest records (ties by archive order); 0 with no context."""
    if not context:
        return 0.0
    x = np.asarray(features, dtype=float)
    dist = [float(np.linalg.norm(np.asarray(r.features) - x)) for r in context]
    nearest = sorted(range(len(context)), key=lambda i: (dist[i], i))[:k]
    return float(median(context[i].gain for i in nearest))


def predict_ridge(context: Sequence[Record], features: Sequence[float], lam: float = 1.0) -> float:
    """Ridge regression of gain on features (intercept unpenalised, by centring); 0 with
    no context."""
    if not context:
        return 0.0
    X = np.array([r.features for r in context], dtype=float)  # (records, features)
    y = np.array([r.gain for r in context])
    mean_x, mean_y = X.mean(axis=0), y.mean()
    Xc = X - mean_x
    beta = np.linalg.solve(Xc.T @ Xc + lam * np.eye(X.shape[1]), Xc.T @ (y - mean_y))
    return float(mean_y + (np.asarray(features, dtype=float) - mean_x) @ beta)


def top_k(predicted: Sequence[float], k: int) -> list[int]:
    """Indices of the k highest predictions, ties broken by proposal order."""
    return sorted(range(len(predicted)), key=lambda i: (-predicted[i], i))[:k]


def regret_at_k(predicted: Sequence[float], realized: Sequence[float], k: int = 3) -> float:
    """Best realised gain among all proposals minus the best among the k chosen."""
    chosen = top_k(predicted, k)
    return float(max(realized) - max(realized[i] for i in chosen))


def ndcg_at_k(predicted: Sequence[float], realized: Sequence[float], k: int = 3) -> float:
    """NDCG@k of the predicted order, relevance = realised gain minus the smallest
    realised gain (non-negative); 1.0 when every proposal gains the same."""
    low = min(realized)
    relevance = [g - low for g in realized]

    def dcg(order: Sequence[int]) -> float:
        return sum(relevance[i] / math.log2(rank + 2) for rank, i in enumerate(order[:k]))

    ideal = dcg(sorted(range(len(realized)), key=lambda i: -relevance[i]))
    return 1.0 if ideal == 0 else dcg(top_k(predicted, k)) / ideal


PREDICTORS: dict[str, Predictor] = {"prior": predict_prior, "knn": predict_knn, "ridge": predict_ridge}


def selection_round(archive: Sequence[Record], proposals: Sequence[Record], predictor: Predictor, cross_env: bool,
                    k: int = 3) -> tuple[float, float, list[float]]:
    """(Regret@k, NDCG@k, predictions) of choosing k of ``proposals`` (records of one
    environment whose gains the predictor never sees): each proposal is predicted from
    the archive without its near-duplicate group (and, cross-env, without its environment)."""
    predicted = [predictor(context_for(archive, p.env_id, p.group, cross_env), p.features) for p in proposals]
    realized = [p.gain for p in proposals]
    return regret_at_k(predicted, realized, k), ndcg_at_k(predicted, realized, k), predicted


def selection_metrics(archive: Sequence[Record], env_id: str, cross_env: bool, draws: int, n: int = 16,
                      k: int = 3, seed: int = 0) -> dict[str, tuple[list[float], list[float]]]:
    """Per predictor, (Regret@k, NDCG@k) of each of ``draws`` seeded draws of ``n``
    proposals from ``env_id``'s records (the same draws for every predictor: paired)."""
    pool = [r for r in archive if r.env_id == env_id]
    rng = random.Random(seed)
    rounds = [rng.sample(pool, n) for _ in range(draws)]
    out = {}
    for name, predictor in PREDICTORS.items():
        results = [selection_round(archive, proposals, predictor, cross_env, k)[:2] for proposals in rounds]
        out[name] = ([r[0] for r in results], [r[1] for r in results])
    return out
