"""One trial of a config search on pde1d, in-process: configs are numbers a trusted
searcher proposed (not programs), so they go through the suite's own runner and trusted
scorer directly. Shared by benchmarks/pde1d_baselines.py and the prior_or_feedback loop."""

from __future__ import annotations

from statistics import fmean

from suites.pde1d.space import CONFIG_SPACE
from suites.pde1d.suite import FLOOR, Pde1d, run


def suggest(trial) -> dict:
    """One config from CONFIG_SPACE through an Optuna trial."""
    config = {}
    for param, kind, bounds in CONFIG_SPACE:
        if kind == "categorical":
            config[param] = trial.suggest_categorical(param, list(bounds))
        elif kind == "int":
            config[param] = trial.suggest_int(param, *bounds)
        else:
            config[param] = trial.suggest_float(param, *bounds, log=kind == "float-log")
    return config


def split_nrmse(suite: Pde1d, cases: list, config: dict, split: str) -> float:
    """Mean nRMSE of ``config`` over a split's cases (the floor's nRMSE when invalid)."""
    values = []
    for case in (c for c in cases if c.split == split):
        verdict = suite.score(case, run(lambda: config, case.payload))
        values.append(verdict.metrics.get("nrmse", -FLOOR))
    return fmean(values)
