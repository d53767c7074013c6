"""A categorical policy over named actions trained by REINFORCE with group normalisation
(CoVer's "both roles' GRPO gradients"): the advantage of each sample is its reward minus
the group's mean over the group's standard deviation, and the logits move along
``sum_i A_i (onehot(a_i) - softmax(logits)) / n``. Pure numpy."""

from __future__ import annotations

import numpy as np


def probabilities(logits: np.ndarray) -> np.ndarray:
    """softmax of the logits."""
    z = np.exp(logits - logits.max())
    return z / z.sum()


def sample(logits: np.ndarray, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` action indices drawn from softmax(logits)."""
    return [int(a) for a in rng.choice(len(logits), size=n, p=probabilities(logits))]


def advantages(rewards: list[float]) -> np.ndarray:
    """Group-normalised rewards; all zero when the group's rewards are all equal."""
    r = np.asarray(rewards, dtype=float)
    std = r.std()
    return np.zeros_like(r) if std < 1e-12 else (r - r.mean()) / std


def reinforce(logits: np.ndarray, actions: list[int], rewards: list[float], lr: float) -> np.ndarray:
    """The logits after one REINFORCE step on a group of (action, reward) samples."""
    adv, probs = advantages(rewards), probabilities(logits)
    grad = np.zeros_like(logits, dtype=float)
    for action, a in zip(actions, adv):
        grad += a * (np.eye(len(logits))[action] - probs)
    return logits + lr * grad / max(len(actions), 1)
