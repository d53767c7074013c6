"""pde1d's fine-tuning configuration space, as data, and its validation.

``CONFIG_SPACE`` rows are (param, kind, range): kind ``float-log`` and ``float`` ranges
are closed intervals (a log-scale one is sampled and its distances measured in log10),
``int`` an inclusive integer interval, ``categorical`` the allowed values. Later loops
read it as the ``config_space`` table that normalises distances between configs.
"""

from __future__ import annotations

import math
from numbers import Real

CONFIG_SPACE: tuple[tuple[str, str, tuple], ...] = (
    ("lr", "float-log", (1e-4, 10.0)),
    ("optimizer", "categorical", ("adam", "sgd")),
    ("loss", "categorical", ("mse", "l1")),
    ("epochs", "int", (1, 200)),
    ("modes", "int", (1, 32)),
    ("weight_decay", "float", (0.0, 0.1)),
)


def config_space_rows() -> list[dict]:
    """CONFIG_SPACE as table rows (param, kind, low, high, choices)."""
    rows = []
    for param, kind, bounds in CONFIG_SPACE:
        numeric = kind != "categorical"
        rows.append({"param": param, "kind": kind, "low": float(bounds[0]) if numeric else None,
                     "high": float(bounds[1]) if numeric else None,
                     "choices": None if numeric else list(bounds)})
    return rows


def _check(kind: str, bounds: tuple, value) -> str | None:
    if kind == "categorical":
        return None if isinstance(value, str) and value in bounds else f"must be one of {list(bounds)}"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
    elif isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        return "must be a finite number"
    low, high = bounds
    return None if low <= value <= high else f"must lie in [{low:g}, {high:g}]"


def validate_config(config) -> str | None:
    """Why ``config`` is outside CONFIG_SPACE (the first reason found), or None."""
    if not isinstance(config, dict):
        return f"config() must return a dict, got {type(config).__name__}"
    params = [p for p, _, _ in CONFIG_SPACE]
    missing, extra = sorted(set(params) - set(config)), sorted(set(config) - set(params))
    if missing or extra:
        return f"config keys must be {params}; missing {missing}, unknown {extra}"
    for param, kind, bounds in CONFIG_SPACE:
        reason = _check(kind, bounds, config[param])
        if reason:
            return f"{param}={config[param]!r} {reason}"
    return None
