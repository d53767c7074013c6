"""The Lasso suite's problems and its trusted arithmetic: scikit-learn's bundled
datasets (copied into ``suites/reference/lasso``, pinned by sha256), seeded generated
designs, the primal objective and the duality gap, and scikit-learn's own solution.

A problem is (X, y, alpha) with X's columns standardised (mean 0, population std 1) and
y standardised too, so the objective at w = 0 is always 0.5:

    P(w) = ||y - X w||^2 / (2 n) + alpha * ||w||_1
"""

from __future__ import annotations

import gzip
import io
from functools import lru_cache

import numpy as np

from suites.data import ReferenceDataError, read_verified

BUNDLED = {
    "diabetes": "scikit-learn's diabetes (442 x 10, raw features, disease progression)",
    "breast_cancer": "scikit-learn's breast cancer (569 x 30, diagnosis label as the target)",
    "wine": "scikit-learn's wine (178 x 12, alcohol regressed on the other 12 measurements)",
}


def _csv(name: str, delimiter: str | None, skip: int) -> np.ndarray:
    raw = read_verified(f"lasso/{name}")
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    try:
        return np.loadtxt(io.StringIO(raw.decode()), delimiter=delimiter, skiprows=skip, ndmin=2)
    except ValueError as error:
        raise ReferenceDataError(f"lasso/{name} does not parse: {error}") from None


def bundled_xy(dataset: str) -> tuple[np.ndarray, np.ndarray]:
    """The raw (X, y) of one bundled dataset, read from the pinned files."""
    if dataset == "diabetes":
        return _csv("diabetes_data_raw.csv.gz", None, 0), _csv("diabetes_target.csv.gz", None, 0)[:, 0]
    if dataset == "breast_cancer":
        table = _csv("breast_cancer.csv", ",", 1)
        return table[:, :-1], table[:, -1]
    if dataset == "wine":
        table = _csv("wine_data.csv", ",", 1)
        return table[:, 1:-1], table[:, 0]
    raise ValueError(f"lasso: unknown bundled dataset {dataset!r}; known: {sorted(BUNDLED)}")


def standardise(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Columns of X and y to mean 0 and population std 1 (a constant column is refused)."""
    std = X.std(axis=0)
    if np.any(std == 0):
        raise ValueError(f"lasso: constant columns {np.flatnonzero(std == 0).tolist()} cannot be standardised")
    return (X - X.mean(axis=0)) / std, (y - y.mean()) / y.std()


def generate_xy(n: int, p: int, rho: float, k: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded AR(1) design (corr(x_i, x_j) = rho^|i-j|), k true coefficients of +-1 at
    seeded positions, y = X w + noise * N(0, 1), both standardised."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, p))  # (n, p)
    X = np.empty((n, p))
    X[:, 0] = z[:, 0]
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + np.sqrt(1.0 - rho * rho) * z[:, j]
    w = np.zeros(p)
    w[rng.choice(p, size=k, replace=False)] = rng.choice([-1.0, 1.0], size=k)
    y = X @ w + noise * rng.standard_normal(n)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, (y - y.mean()) / y.std()


def problem_xy(payload: dict) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a case payload: its data, or the generator's output for its spec."""
    if "generate" in payload:
        return generate_xy(**payload["generate"])
    return np.asarray(payload["X"], dtype=float), np.asarray(payload["y"], dtype=float)


def alpha_max(X: np.ndarray, y: np.ndarray) -> float:
    """The smallest alpha at which w = 0 is optimal: ||X^T y||_inf / n."""
    return float(np.max(np.abs(X.T @ y)) / len(y))


def objective(X: np.ndarray, y: np.ndarray, w: np.ndarray, alpha: float) -> float:
    """P(w) = ||y - X w||^2 / (2 n) + alpha ||w||_1."""
    r = y - X @ w
    return float(r @ r / (2 * len(y)) + alpha * np.abs(w).sum())


def duality_gap(X: np.ndarray, y: np.ndarray, w: np.ndarray, alpha: float) -> float:
    """P(w) - D(theta) >= P(w) - P* with the dual point theta = r / max(n alpha, ||X^T r||_inf)
    (scikit-learn's choice), in the units of P."""
    n = len(y)
    r = y - X @ w
    lam = n * alpha
    c = min(1.0, lam / max(float(np.max(np.abs(X.T @ r))), 1e-300))
    gap = 0.5 * (r @ r) * (1 + c * c) + lam * np.abs(w).sum() - c * (r @ y)
    return float(gap / n)


@lru_cache(maxsize=64)
def sklearn_objective(payload_key: str) -> float:
    """P at scikit-learn's ``Lasso`` solution (tol 1e-12) for a case, by its JSON
    payload; computed here, outside the sandbox."""
    import json

    from sklearn.linear_model import Lasso

    payload = json.loads(payload_key)
    X, y = problem_xy(payload)
    model = Lasso(alpha=payload["alpha"], fit_intercept=False, tol=1e-12, max_iter=1_000_000)
    model.fit(X, y)
    return objective(X, y, model.coef_, payload["alpha"])
