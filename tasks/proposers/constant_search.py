"""Model-based search of a structure's constants (issue 14): Optuna's TPE over the run's
scored programs that share the parent's structure.

A grammar structure (a bin packing expression, a circle packing layout) exposes
constants. Once the run has scored several programs of one structure, their (constants,
score) pairs are trials of a search over that structure's constants: ``suggest`` replays
them into an Optuna study (``add_trial``) and asks TPE for the next point, inside a box
around the parent's constants. The child is then an ordinary candidate, evaluated and
counted like any other, so every TPE trial is one counted evaluation and the study is
rebuilt from the store after a resume. With fewer than ``STARTUP`` trials in the box TPE
draws uniformly (log-uniformly on a log axis) from it.

Pure apart from Optuna: the same trials and seed give the same point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

STARTUP = 4
"""Trials in the box before TPE models them (Optuna's default is 10; a structure rarely
gets that many children)."""


@dataclass(frozen=True)
class Axis:
    """One constant's search range."""

    low: float
    high: float
    log: bool = False

    def holds(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class Trial:
    """A scored point: the constants of one program of the structure and its score
    (higher is better)."""

    values: tuple[float, ...]
    score: float


def in_box(axes: Sequence[Axis], trials: Sequence[Trial]) -> list[Trial]:
    """The trials with a finite score whose every value lies on its axis."""
    return [t for t in trials if len(t.values) == len(axes) and math.isfinite(t.score)
            and all(a.holds(v) for a, v in zip(axes, t.values))]


def suggest(axes: Sequence[Axis], trials: Sequence[Trial], seed: int) -> list[float]:
    """TPE's next point in the box ``axes``, given the ``trials`` that lie in it."""
    import optuna
    from optuna.distributions import FloatDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    distributions = {f"c{i}": FloatDistribution(a.low, a.high, log=a.log) for i, a in enumerate(axes)}
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.add_trials([
        optuna.trial.create_trial(params={f"c{i}": v for i, v in enumerate(t.values)},
                                  distributions=distributions, value=t.score)
        for t in in_box(axes, trials)
    ])
    trial = study.ask(distributions)
    return [trial.params[f"c{i}"] for i in range(len(axes))]
