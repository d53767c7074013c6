"""The three non-LLM proposers of the protocol, each a pure function of (task, history,
seed, t) -> the config of trial t, so a replay at a recorded decision point with an
edited history (or another seed) is the same call with other arguments.

- ``random``: uniform over CONFIG_SPACE (log-uniform lr), from an RNG of (seed, t); it
  never reads the history: the negative control.
- ``tpe``: Optuna's TPESampler (seeded by (seed, t)) over a fresh study that holds the
  history as completed trials; its first ``startup`` trials are random: the positive control.
- ``prior`` [impl]: trial 1 from the PDE descriptor (``prior_config``), then local search:
  the best-validation config so far with one parameter perturbed (RNG of (seed, t))."""

from __future__ import annotations

import math
import random
from typing import Sequence

from schemas.ids import derived_id
from suites.pde1d.space import CONFIG_SPACE
from suites.pde1d.trials import suggest

PROPOSERS = ("random", "tpe", "prior")
History = Sequence[tuple[dict, float]]
"""(config, validation nRMSE) of the trials so far, in trial order."""


def _rng(*parts: object) -> random.Random:
    return random.Random(derived_id(*parts))


def _clip(kind: str, bounds: tuple, value):
    low, high = bounds
    value = min(max(value, low), high)
    return int(round(value)) if kind == "int" else float(value)


def random_config(rng: random.Random) -> dict:
    config = {}
    for param, kind, bounds in CONFIG_SPACE:
        if kind == "categorical":
            config[param] = rng.choice(bounds)
        elif kind == "int":
            config[param] = rng.randint(*bounds)
        elif kind == "float-log":
            config[param] = 10 ** rng.uniform(math.log10(bounds[0]), math.log10(bounds[1]))
        else:
            config[param] = rng.uniform(*bounds)
    return config


def prior_config(task: dict) -> dict:
    """The descriptor's prior: a base lr that grows with the size of the shift (3e-3, x3
    across PDE families, x(1 + shift) within one: |log nu_t/nu_s| for Burgers, |a_t - a_s|/2
    for advection), more epochs across families, all 32 modes for a sharp Burgers target
    (nu < 0.05), adam, mse, no decay."""
    (sf, sc), (tf, tc) = task["source"], task["target"]
    if sf != tf:
        shift, cross = 1.0, True
    else:
        shift, cross = (abs(math.log(tc / sc)) if tf == "burgers" else abs(tc - sc) / 2), False
    lr = 3e-3 * (3.0 if cross else 1.0 + shift)
    return {"lr": _clip("float-log", (1e-4, 10.0), lr), "optimizer": "adam", "loss": "mse",
            "epochs": 150 if cross else 100, "modes": 32 if tf == "burgers" and tc < 0.05 else 16,
            "weight_decay": 0.0}


def perturb(config: dict, rng: random.Random) -> dict:
    """``config`` with one parameter (chosen by ``rng``) moved: lr by a factor 10^N(0, 0.4),
    a numeric one by N(0, 0.15 x range) (an int at least 1), a categorical to another value; a step into a bound is taken the other way."""
    param, kind, bounds = rng.choice(CONFIG_SPACE)
    out = dict(config)
    if kind == "categorical":
        out[param] = rng.choice([v for v in bounds if v != config[param]])
    elif kind == "float-log":
        factor = 10 ** rng.gauss(0, 0.4)
        out[param] = _clip(kind, bounds, config[param] * factor)
        if out[param] == config[param]:  # at a bound: step the other way
            out[param] = _clip(kind, bounds, config[param] / factor)
    else:
        step = rng.gauss(0, 0.15 * (bounds[1] - bounds[0]))
        if kind == "int":
            step = math.copysign(max(1, abs(round(step))), step)
        out[param] = _clip(kind, bounds, config[param] + step)
        if out[param] == config[param]:  # at a bound: step the other way
            out[param] = _clip(kind, bounds, config[param] - step)
    return out


def tpe_config(history: History, seed: object, t: int, startup: int) -> dict:
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {p: CategoricalDistribution(list(b)) if k == "categorical" else IntDistribution(*b) if k == "int"
             else FloatDistribution(*b, log=k == "float-log") for p, k, b in CONFIG_SPACE}
    sampler = optuna.samplers.TPESampler(seed=int(derived_id(seed, "tpe", t)[:8], 16), n_startup_trials=startup)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    for config, value in history:
        study.add_trial(optuna.trial.create_trial(params=dict(config), distributions=dists, value=value))
    return suggest(study.ask())


def propose(proposer: str, task: dict, history: History, seed: object, t: int, startup: int = 10) -> dict:
    """Trial ``t``'s config (``history`` holds trials 1 .. t-1)."""
    if proposer == "random":
        return random_config(_rng(seed, "random", t))
    if proposer == "tpe":
        return tpe_config(history, seed, t, startup)
    if proposer == "prior":
        if not history:
            return prior_config(task)
        best = min(history, key=lambda h: h[1])[0]
        return perturb(best, _rng(seed, "prior", t))
    raise ValueError(f"prior_or_feedback: unknown proposer {proposer!r}; known: {', '.join(PROPOSERS)}")
