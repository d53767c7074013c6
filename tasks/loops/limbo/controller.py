"""The online per-task controller (pure): features, two LinUCB heads per arm, the choice
and the update (the paper's Algorithm 1; the controller is not an LLM).

Features of a request, read before it runs: a bias, the template (one-hot over toolsim's
templates), the request's prompt length (characters of its parameters / 100), the
recent success rate and mean cost (per 1k tokens) over the last ``window`` requests,
whether memory holds an entry of the request's template, and the memory's fill.

Heads: per arm a ridge regression ``A = ridge*I + sum x x'`` shared by a success head
(``b_s = sum success * x``) and a cost head (``b_c = sum cost * x``); ``p = x'A^-1 b_s``,
``c = x'A^-1 b_c``, ``bonus = alpha * sqrt(x'A^-1 x)``. The selection criterion (its
form the paper leaves open): ``p + bonus - cost_weight * c``; ties go to the first arm.
Only the chosen arm's statistics are updated (register).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from suites.toolsim.templates import TEMPLATES

TEMPLATE_ORDER = tuple(sorted(TEMPLATES))
DIM = 1 + len(TEMPLATE_ORDER) + 5


def features(template: str, params: Mapping, recent: Sequence[tuple[bool, float]], has_template: bool,
             fill: float) -> list[float]:
    """The request's feature vector (module docstring); ``recent`` is (success, cost) of
    the last requests, newest last, already cut to the window."""
    onehot = [1.0 if t == template else 0.0 for t in TEMPLATE_ORDER]
    rate = sum(s for s, _ in recent) / len(recent) if recent else 0.5
    cost = sum(c for _, c in recent) / len(recent) if recent else 0.0
    length = len(json.dumps(dict(params), sort_keys=True)) / 100.0
    return [1.0, *onehot, length, rate, cost, 1.0 if has_template else 0.0, fill]


@dataclass
class Head:
    """One arm's statistics: A, b_s, b_c and its pull count."""

    a: np.ndarray
    b_s: np.ndarray
    b_c: np.ndarray
    pulls: int = 0

    @classmethod
    def fresh(cls, ridge: float, dim: int = DIM) -> "Head":
        return cls(ridge * np.eye(dim), np.zeros(dim), np.zeros(dim))


@dataclass(frozen=True)
class Choice:
    arm: str
    p_pred: float
    cost_pred: float
    bonus: float
    score: float


@dataclass
class Controller:
    arms: tuple[str, ...]
    alpha: float
    cost_weight: float
    ridge: float
    heads: dict[str, Head] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for arm in self.arms:
            self.heads.setdefault(arm, Head.fresh(self.ridge))

    def predict(self, arm: str, x: Sequence[float]) -> Choice:
        head, v = self.heads[arm], np.asarray(x, dtype=float)
        inv = np.linalg.inv(head.a)
        p, c = float(v @ inv @ head.b_s), float(v @ inv @ head.b_c)
        bonus = self.alpha * float(np.sqrt(max(v @ inv @ v, 0.0)))
        return Choice(arm, p, c, bonus, p + bonus - self.cost_weight * c)

    def choose(self, x: Sequence[float]) -> Choice:
        """sample: the arm with the highest criterion (first on ties)."""
        best = None
        for arm in self.arms:
            choice = self.predict(arm, x)
            if best is None or choice.score > best.score:
                best = choice
        return best

    def update(self, arm: str, x: Sequence[float], success: bool, cost: float) -> None:
        """register: the chosen arm's statistics only."""
        head, v = self.heads[arm], np.asarray(x, dtype=float)
        head.a = head.a + np.outer(v, v)
        head.b_s = head.b_s + float(success) * v
        head.b_c = head.b_c + float(cost) * v
        head.pulls += 1

    def state(self) -> dict:
        return {arm: {"a": h.a.tolist(), "b_s": h.b_s.tolist(), "b_c": h.b_c.tolist(), "pulls": h.pulls}
                for arm, h in sorted(self.heads.items())}
