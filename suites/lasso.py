"""Lasso: make a numpy coordinate-descent Lasso solver fast without making it wrong.

A candidate defines ``solve_lasso(X, y, alpha, tol) -> w`` minimising
P(w) = ||y - X w||^2 / (2 n) + alpha ||w||_1 to a duality gap of at most
tol * ||y||^2 / (2 n). The seed (``suites/lasso_seed.py``) is plain cyclic coordinate
descent whose knobs (coordinate order, gap-safe screening, stopping tolerance, warm
start along an alpha path, Gram precompute, active-set sweeps) start switched off.

Cases: one per (dataset, alpha) with alpha = 0.3, 0.1, 0.03 x alpha_max. Datasets are
split whole, so held-out datasets are never searched on: train = diabetes + a wide
generated design, select = breast cancer + a correlated one, holdout = wine + a third.

Runner (inside the sandbox): builds the problem, then calls the candidate ``repeats``
times on fresh copies, timing each call with ``time.thread_time`` (CPU time of the
calling thread, bound before the candidate is loaded; BLAS is held to one thread, so
the solve runs on that thread), and returns every call's w and CPU seconds. Not
``time.process_time``: on a loaded machine the process clock advanced in steps of
milliseconds in the sandbox (sub-millisecond solves read 0.0), the thread clock did not.

Trusted scorer (here): every repeat's w must be finite, of length p, reach the duality
gap (recomputed here, slack 1e-9 relative) and have an objective no worse than
scikit-learn's ``Lasso`` at tol 1e-12 by more than the same tolerance. A fast but wrong
solver is invalid and scores the floor. Primary metric ``neg_log10_cpu_ms`` =
-log10(min CPU ms over repeats) (a mean over cases is a geometric-mean speed; a gate
delta of 0.1 is a 1.26x speed-up); ``cpu_spread`` = max/min - 1 over repeats is the noise.

Limits: the CPU time is measured by the runner inside the candidate's process, so a
candidate that rewrites the runner's globals or caches answers across its repeats
could forge it; the AST mutations never do, an LLM proposer is not stopped by this.
"""

from __future__ import annotations

import inspect
import json
import math
import time
from numbers import Real
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from suites.base import Case, Split, Suite, Verdict
from suites.data import verify_all
from suites.lasso_data import (
    alpha_max,
    bundled_xy,
    duality_gap,
    generate_xy,
    objective,
    problem_xy,
    sklearn_objective,
    standardise,
)

FLOOR = -6.0
"""``neg_log10_cpu_ms`` of an invalid output (1000 s of CPU: beyond every time limit)."""
MIN_CPU_MS = 1e-3
"""Times below one microsecond count as one microsecond (the clock's resolution)."""
SLACK = 1e-9
ALPHA_FRACTIONS = (0.3, 0.1, 0.03)
GENERATED = {
    "gen_wide": {"n": 100, "p": 200, "rho": 0.5, "k": 10, "noise": 0.5, "seed": 1},
    "gen_corr": {"n": 300, "p": 50, "rho": 0.8, "k": 8, "noise": 1.0, "seed": 2},
    "gen_holdout": {"n": 150, "p": 120, "rho": 0.7, "k": 10, "noise": 0.5, "seed": 3},
}
DATASET_SPLITS: dict[str, Split] = {
    "diabetes": "train", "gen_wide": "train",
    "breast_cancer": "select", "gen_corr": "select",
    "wine": "holdout", "gen_holdout": "holdout",
}
_clock = time.thread_time
"""The runner's clock (its head binds the same one inside the sandbox)."""
SEED_PROGRAM = Path(__file__).with_name("lasso_seed.py").read_text()

_RUNNER_HEAD = '''from __future__ import annotations

import os

os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = "1"  # before numpy: one BLAS thread
import time

import numpy as np

_clock = time.thread_time  # bound before the candidate is loaded
'''


def run(fn, payload):
    """Solve the case ``repeats`` times on fresh copies; every w and its CPU seconds."""
    X, y = problem_xy(payload)
    ws, times = [], []
    for _ in range(payload["repeats"]):
        X_copy, y_copy = X.copy(), y.copy()
        start = _clock()
        w = fn(X_copy, y_copy, payload["alpha"], payload["tol"])
        times.append(_clock() - start)
        ws.append(np.asarray(w, dtype=float).ravel().tolist())
    return {"w": ws, "cpu_s": times}


RUNNER_SOURCE = "\n\n".join([_RUNNER_HEAD] + [inspect.getsource(f) for f in (generate_xy, problem_xy, run)])
"""The sandbox runner: this package's own problem builder and ``run``."""


def _parse(output: Any, p: int, repeats: int) -> tuple[list[np.ndarray], list[float]] | str:
    """Every repeat's w and CPU seconds, or why the output is malformed."""
    if not isinstance(output, dict) or not isinstance(output.get("w"), list) or not isinstance(
            output.get("cpu_s"), list):
        return "output must be a dict with lists 'w' and 'cpu_s'"
    if len(output["w"]) != repeats or len(output["cpu_s"]) != repeats:
        return f"output has {len(output['w'])} solutions and {len(output['cpu_s'])} times, expected {repeats}"
    times = output["cpu_s"]
    if not all(isinstance(t, Real) and not isinstance(t, bool) and math.isfinite(t) and t >= 0 for t in times):
        return "cpu_s must hold finite non-negative numbers"
    ws = []
    for index, w in enumerate(output["w"]):
        if not isinstance(w, list) or len(w) != p:
            return f"w[{index}] is not a list of {p} numbers"
        if not all(isinstance(v, Real) and not isinstance(v, bool) for v in w):
            return f"w[{index}] holds a value that is not a number"
        array = np.array(w, dtype=float)
        if not np.all(np.isfinite(array)):
            return f"w[{index}] holds a value that is not finite"
        ws.append(array)
    return ws, [float(t) for t in times]


def check_solution(payload: dict, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[str | None, float, float]:
    """(reason w fails or None, its duality gap and its objective excess over
    scikit-learn's, both relative to P(0))."""
    alpha, tol = payload["alpha"], payload["tol"]
    p0 = float(y @ y) / (2 * len(y))
    gap = duality_gap(X, y, w, alpha) / p0
    excess = (objective(X, y, w, alpha) - sklearn_objective(json.dumps(payload, sort_keys=True))) / p0
    if gap > tol * (1 + SLACK):
        return f"duality gap {gap:.3g} x P(0) exceeds the tolerance {tol:g}", gap, excess
    if excess > tol * (1 + SLACK):
        return f"objective exceeds scikit-learn's by {excess:.3g} x P(0), above the tolerance {tol:g}", gap, excess
    return None, gap, excess


class Lasso(Suite):
    """Runtime of a coordinate-descent Lasso at a duality-gap tolerance, checked
    against scikit-learn."""

    name = "lasso"
    primary_metric = "neg_log10_cpu_ms"
    entrypoint = "solve_lasso"
    candidate = "a Python `solve_lasso(X, y, alpha, tol)` (numpy coordinate descent)"
    reference = "scikit-learn's Lasso objective (validity); CPU ms of the seed's plain cyclic CD"

    def __init__(self, tol: float = 1e-6, repeats: int = 5):
        if not (isinstance(tol, Real) and 1e-12 <= tol <= 1e-2):
            raise ValueError(f"lasso: tol must be a number in [1e-12, 1e-2], got {tol!r}")
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 50:
            raise ValueError(f"lasso: repeats must be an integer in 1..50, got {repeats!r}")
        self.tol, self.repeats = float(tol), repeats

    def check_data(self) -> int:
        return verify_all("lasso/")

    def cases(self) -> list[Case]:
        cases = []
        for dataset, split in DATASET_SPLITS.items():
            if dataset in GENERATED:
                X, y = generate_xy(**GENERATED[dataset])
                data = {"generate": GENERATED[dataset]}
            else:
                X, y = standardise(*bundled_xy(dataset))
                data = {"X": X.tolist(), "y": y.tolist()}
            top = alpha_max(X, y)
            for fraction in ALPHA_FRACTIONS:
                payload = {"dataset": dataset, **data, "alpha": top * fraction, "tol": self.tol,
                           "repeats": self.repeats}
                cases.append(Case(f"{dataset}/a{fraction:g}", split, payload))
        return cases

    def seed_program(self) -> str:
        return SEED_PROGRAM

    def runner_source(self) -> str:
        return RUNNER_SOURCE

    def score(self, case: Case, output: Any) -> Verdict:
        X, y = problem_xy(case.payload)
        parsed = _parse(output, X.shape[1], case.payload["repeats"])
        if isinstance(parsed, str):
            return Verdict(False, {self.primary_metric: FLOOR}, parsed)
        ws, times = parsed
        gaps, excesses = [], []
        for index, w in enumerate(ws):
            reason, gap, excess = check_solution(case.payload, X, y, w)
            gaps.append(gap)
            excesses.append(excess)
            if reason:
                return Verdict(False, {self.primary_metric: FLOOR, "gap": gap, "excess": excess},
                               f"repeat {index}: {reason}")
        fastest = max(min(times) * 1000.0, MIN_CPU_MS)
        metrics = {
            self.primary_metric: -math.log10(fastest),
            "cpu_ms_min": fastest,
            "cpu_ms_median": median(times) * 1000.0,
            "cpu_spread": max(times) / max(min(times), MIN_CPU_MS / 1000.0) - 1.0,
            "gap": max(gaps),
            "excess": max(excesses),
            "nonzeros": float(np.count_nonzero(ws[0])),
        }
        return Verdict(True, metrics)

    def normalize(self, value: float) -> float:
        """``10 ** value`` = 1 / (CPU ms): 1.0 for a 1 ms solve (no published best runtime
        exists; the scale is the reciprocal time, so ratios of it are speed-ups)."""
        return 10.0 ** value
