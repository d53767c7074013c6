"""Seed for the Lasso suite: plain cyclic coordinate descent, with knobs switched off."""

import numpy as np

MAX_EPOCHS = 100000
GAP_EVERY = 1  # epochs between duality-gap checks
TOL_SCALE = 1.0  # stop when gap <= TOL_SCALE * target; above 1.0 the answer may fail the check
SHUFFLE = 0  # > 0: a seeded random coordinate order per epoch instead of cyclic
USE_GRAM = 0  # > 0: precompute X^T X and update X^T r instead of the residual
SCREEN = 0  # > 0: gap-safe screening at every gap check
ACTIVE_SWEEPS = 0  # > 0: after each full epoch, this many sweeps over the nonzero coordinates
PATH_STEPS = 1  # > 1: warm start along a geometric path of alphas down to alpha
PATH_START = 0.5  # the path's first alpha, as a fraction of alpha_max


def solve_lasso(X, y, alpha, tol):
    """Minimise ||y - X w||^2 / (2 n) + alpha ||w||_1 until the duality gap is at most
    tol * ||y||^2 / (2 n); returns w."""
    X = np.asfortranarray(X)
    n, p = X.shape
    target = TOL_SCALE * tol * float(y @ y) / (2 * n)
    w = np.zeros(p)
    alpha_max = float(np.max(np.abs(X.T @ y))) / n
    steps = max(1, PATH_STEPS)
    alphas = [alpha]
    if steps > 1 and alpha < PATH_START * alpha_max:
        alphas = list(np.geomspace(PATH_START * alpha_max, alpha, steps))
    for a in alphas:
        w = descend(X, y, w, a, target)
    return w


def descend(X, y, w, alpha, target):
    """Coordinate descent from w at one alpha until the duality gap <= target."""
    n, p = X.shape
    norms = (X * X).sum(axis=0) / n
    w = w.copy()
    r = y - X @ w
    gram = X.T @ X / n if USE_GRAM > 0 else None
    q = X.T @ r / n if USE_GRAM > 0 else None
    active = np.arange(p)
    rng = np.random.default_rng(0)
    for epoch in range(MAX_EPOCHS):
        order = rng.permutation(active) if SHUFFLE > 0 else active
        sweep(X, r, q, gram, w, norms, alpha, order)
        for _ in range(ACTIVE_SWEEPS):
            sweep(X, r, q, gram, w, norms, alpha, np.flatnonzero(w))
        if epoch % max(1, GAP_EVERY) == 0:
            if gram is not None:
                r = y - X @ w
            gap, keep = check(X, y, r, w, alpha)
            if gap <= target:
                return w
            if SCREEN > 0:
                active = active[keep[active]]
    return w


def sweep(X, r, q, gram, w, norms, alpha, order):
    """One pass of exact coordinate minimisation over ``order`` (updates r or q, and w)."""
    n = X.shape[0]
    for j in order:
        old = w[j]
        if gram is None:
            rho = float(X[:, j] @ r) / n + norms[j] * old
        else:
            rho = q[j] + norms[j] * old
        new = np.sign(rho) * max(abs(rho) - alpha, 0.0) / norms[j]
        if new != old:
            w[j] = new
            if gram is None:
                r -= (new - old) * X[:, j]
            else:
                q -= (new - old) * gram[:, j]


def check(X, y, r, w, alpha):
    """The duality gap at w, and which coordinates gap-safe screening keeps."""
    n = X.shape[0]
    lam = n * alpha
    corr = X.T @ r
    c = min(1.0, lam / max(float(np.max(np.abs(corr))), 1e-300))
    gap = (0.5 * float(r @ r) * (1 + c * c) + lam * float(np.abs(w).sum()) - c * float(r @ y)) / n
    radius = np.sqrt(2 * max(gap, 0.0) * n) / lam
    keep = np.abs(corr) * c / lam + radius * np.sqrt((X * X).sum(axis=0)) >= 1.0
    keep |= w != 0
    return gap, keep
