'''Circle packing structures for the `grammar` proposer (issue 14): a structure is a
plain dict, rendered as a ``construct_packing(n)`` program (``render``) and read back
from one (``parse``).

A structure is
- an initial layout: ``family`` "rings" (layer k is a ring of ``counts[k]`` centres at
  distance ``sizes[k]`` from the square's centre, turned by ``twists[k]`` radians, pushed
  toward the corners by ``squareness``) or "rows" (layer k is a row of ``counts[k]``
  centres at height (k + 0.5) / rows + ``sizes[k]``, shifted by ``twists[k]`` of a
  slot); centres clipped to [``margin``, 1 - ``margin``], then moved by ``jitter`` times
  normal noise from ``np.random.default_rng(seed)``;
- a polish: ``polish`` "none", "slsqp" (SLSQP on centres and radii together, exact
  gradients, at most ``iterations`` iterations) or "penalty" (L-BFGS-B on the sum of
  radii minus growing overlap penalties), kept only when its centres' LP radii sum to
  more than the layout's (SLSQP can diverge: a structure found at n=26 collapsed every
  centre onto the corners at n=32 under the sandbox's single-threaded BLAS); with a
  polish, ``hops`` basin hops (the smallest circle moved to a random point, every centre
  by ``hop_size`` times normal noise, polished again, kept when the sum improves),
  stopped early once the case has used ``HOP_CPU_S`` seconds of CPU in this call (a
  guard against the sandbox's per-case limit: for n=26 it is not reached at the
  grammar's 16 hops);
- always last: radii from the linear program that is optimal for the final centres,
  shaved until every constraint holds exactly, so the packing the scorer sees is feasible.

Counts adapt to any n: layers are filled in order and the last is cut at n; missing
centres form one more layer. Circle_packing's seed program reads as ``SEED_STRUCTURE``
(for n=26 its rendering gives the seed's packing, 2.2593).
'''

from __future__ import annotations

import ast

LAYER_FIELDS = ("counts", "sizes", "twists")
CONSTANTS = {
    # field: (low, high, step of a mutation / half-width of a tuning range)
    "sizes": (-0.2, 0.75, 0.05),
    "twists": (-3.2, 3.2, 0.3),
    "squareness": (0.0, 1.0, 0.15),
    "margin": (0.0, 0.2, 0.02),
    "jitter": (0.0, 0.1, 0.01),
    "hop_size": (0.0, 0.1, 0.01),
}
"""The constants a structure exposes, with their bounds; the per-layer ones are lists."""
POLISHES = ("none", "slsqp", "penalty")
ITERATIONS = (10, 1000)
MAX_HOPS = 16
HOP_CPU_S = 4.0

SEED_STRUCTURE = {
    "family": "rings", "counts": [1, 7, 14, 4], "sizes": [0.0, 0.2, 0.4, 0.6],
    "twists": [0.0, 0.3, 0.6, 0.9], "squareness": 0.5, "margin": 0.04, "jitter": 0.0,
    "seed": 0, "polish": "none", "iterations": 100, "hops": 0, "hop_size": 0.01,
}
"""Circle_packing's seed program as a structure (its rings for n=26)."""
KEYS = tuple(SEED_STRUCTURE)

PROGRAM = '''"""Circle packing from a structure (grammar proposer): a layout, a polish, radii by LP."""

import time

import numpy as np
from scipy.optimize import linprog, minimize

STRUCTURE = STRUCTURE_LITERAL


def construct_packing(n):
    """The structure's layout for n circles, polished, with LP-optimal radii."""
    s, started = STRUCTURE, time.process_time()
    rng = np.random.default_rng(s['seed'])
    centers = np.clip(layout(n, s), s['margin'], 1.0 - s['margin'])
    centers = np.clip(centers + s['jitter'] * rng.normal(size=centers.shape), 0.0, 1.0)
    if s['polish'] == 'none' or n < 2:
        return centers, optimal_radii(centers)
    polish = slsqp if s['polish'] == 'slsqp' else penalty
    radii = optimal_radii(centers)
    polished = polish(centers, s['iterations'])
    polished_radii = optimal_radii(polished)
    if polished_radii.sum() > radii.sum():  # a polish that diverged keeps the layout
        centers, radii = polished, polished_radii
    for _ in range(s['hops']):
        if time.process_time() - started > HOP_CPU_S:
            break
        trial = centers.copy()
        trial[np.argmin(radii)] = rng.uniform(0.05, 0.95, 2)
        trial = polish(np.clip(trial + s['hop_size'] * rng.normal(size=trial.shape), 0.0, 1.0), s['iterations'])
        trial_radii = optimal_radii(trial)
        if trial_radii.sum() > radii.sum():
            centers, radii = trial, trial_radii
    return centers, radii


def layer_counts(counts, n):
    """Layers filled in order and cut at n; the centres still missing form one more layer."""
    out = []
    for count in counts:
        take = min(count, n - sum(out))
        if take > 0:
            out.append(take)
    return out + ([n - sum(out)] if sum(out) < n else [])


def layout(n, s):
    """Initial centres: rings around the middle or rows, per layer count, size and twist."""
    counts = layer_counts(s['counts'], n)
    points = []
    for k, count in enumerate(counts):
        size = s['sizes'][k] if k < len(s['sizes']) else 0.2 * k
        twist = s['twists'][k] if k < len(s['twists']) else 0.3 * k
        for j in range(count):
            if s['family'] == 'rings':
                angle = 2 * np.pi * j / count + twist
                direction = np.array([np.cos(angle), np.sin(angle)])
                points.append(0.5 + size * direction / np.max(np.abs(direction)) ** s['squareness'])
            else:
                points.append([(j + 0.5 + twist) / count, (k + 0.5) / len(counts) + size])
    return np.array(points, dtype=float).reshape(n, 2)


def slsqp(centers, iterations):
    """SLSQP on centres and radii together (exact gradients); the start if it fails."""
    n = len(centers)
    i, j = np.triu_indices(n, 1)
    rows = np.arange(len(i))
    walls = np.zeros((4 * n, 3 * n))
    for block, (axis, sign) in enumerate([(0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0)]):
        walls[block * n:(block + 1) * n, axis:2 * n:2] = sign * np.eye(n)
        walls[block * n:(block + 1) * n, 2 * n:] = -np.eye(n)
    offsets = np.repeat([0.0, 1.0, 0.0, 1.0], n)

    def apart(z):
        c, r = z[:2 * n].reshape(n, 2), z[2 * n:]
        return ((c[i] - c[j]) ** 2).sum(axis=1) - (r[i] + r[j]) ** 2

    def apart_jac(z):
        c, r = z[:2 * n].reshape(n, 2), z[2 * n:]
        d, jac = 2 * (c[i] - c[j]), np.zeros((len(i), 3 * n))
        jac[rows, 2 * i], jac[rows, 2 * i + 1] = d[:, 0], d[:, 1]
        jac[rows, 2 * j], jac[rows, 2 * j + 1] = -d[:, 0], -d[:, 1]
        jac[rows, 2 * n + i] = jac[rows, 2 * n + j] = -2 * (r[i] + r[j])
        return jac

    weights = np.concatenate([np.zeros(2 * n), -np.ones(n)])
    start = np.concatenate([centers.ravel(), optimal_radii(centers)])
    result = minimize(lambda z: weights @ z, start, jac=lambda z: weights, method='SLSQP',
                      bounds=[(0.0, 1.0)] * (2 * n) + [(0.0, 0.5)] * n,
                      constraints=[{'type': 'ineq', 'fun': apart, 'jac': apart_jac},
                                   {'type': 'ineq', 'fun': lambda z: walls @ z + offsets, 'jac': lambda z: walls}],
                      options={'maxiter': iterations, 'ftol': 1e-12})
    found = result.x[:2 * n].reshape(n, 2)
    return np.clip(found, 0.0, 1.0) if np.all(np.isfinite(found)) else centers


def penalty(centers, iterations):
    """L-BFGS-B on minus the sum of radii plus overlap and wall penalties of growing weight."""
    n = len(centers)
    i, j = np.triu_indices(n, 1)
    z = np.concatenate([centers.ravel(), optimal_radii(centers)])
    for weight in (10.0, 100.0, 1000.0, 10000.0):
        def value(z):
            c, r = z[:2 * n].reshape(n, 2), z[2 * n:]
            d = c[i] - c[j]
            dist = np.sqrt((d ** 2).sum(axis=1)) + 1e-12
            over = np.maximum(r[i] + r[j] - dist, 0.0)
            wall = np.maximum(np.stack([r - c[:, 0], r + c[:, 0] - 1, r - c[:, 1], r + c[:, 1] - 1]), 0.0)
            grad_c, grad_r = np.zeros((n, 2)), -np.ones(n)
            push = (2 * weight * over / dist)[:, None] * d
            np.add.at(grad_c, i, -push)
            np.add.at(grad_c, j, push)
            np.add.at(grad_r, i, 2 * weight * over)
            np.add.at(grad_r, j, 2 * weight * over)
            w = 2 * weight * wall
            grad_r += w.sum(axis=0)
            grad_c[:, 0] += w[1] - w[0]
            grad_c[:, 1] += w[3] - w[2]
            total = -r.sum() + weight * ((over ** 2).sum() + (wall ** 2).sum())
            return total, np.concatenate([grad_c.ravel(), grad_r])
        z = minimize(value, z, jac=True, method='L-BFGS-B', bounds=[(0.0, 1.0)] * (2 * n) + [(0.0, 0.5)] * n,
                     options={'maxiter': iterations}).x
    found = z[:2 * n].reshape(n, 2)
    return np.clip(found, 0.0, 1.0) if np.all(np.isfinite(found)) else centers


def optimal_radii(centers):
    """Maximise the sum of radii for fixed centres (an LP), then shave what the solver's
    tolerance left so every constraint holds exactly."""
    n = len(centers)
    border = np.minimum(centers, 1.0 - centers).min(axis=1)
    i, j = np.triu_indices(n, 1)
    a = np.zeros((len(i), n))
    a[np.arange(len(i)), i] = a[np.arange(len(i)), j] = 1.0
    b = np.sqrt(((centers[i] - centers[j]) ** 2).sum(axis=1))
    result = linprog(-np.ones(n), A_ub=a if len(i) else None, b_ub=b if len(i) else None,
                     bounds=list(zip(np.zeros(n), border)), method='highs')
    radii = np.clip(result.x if result.success else np.zeros(n), 0.0, border) * (1 - 1e-9)
    for k in range(len(i)):
        if radii[i[k]] + radii[j[k]] > b[k]:
            scale = b[k] / (radii[i[k]] + radii[j[k]]) * (1 - 1e-12)
            radii[i[k]] *= scale
            radii[j[k]] *= scale
    return np.maximum(radii, 1e-12)
'''


def _rounded(value: float) -> float:
    return float(f"{value:.4g}")


def normalised(structure: dict) -> dict:
    """``structure`` with every field in range: constants clipped to their bounds and
    rounded to 4 significant digits, layer lists as long as ``counts``, counts >= 1."""
    s = {key: structure[key] for key in KEYS}
    s["counts"] = [max(1, int(c)) for c in s["counts"]] or [1]
    layers = len(s["counts"])
    for field in ("sizes", "twists"):
        values = list(s[field])[:layers]
        s[field] = values + [values[-1] if values else 0.0] * (layers - len(values))
    for field, (low, high, _) in CONSTANTS.items():
        clip = lambda v: _rounded(min(high, max(low, float(v))))  # noqa: E731
        s[field] = [clip(v) for v in s[field]] if field in LAYER_FIELDS else clip(s[field])
    s["family"] = s["family"] if s["family"] in ("rings", "rows") else "rings"
    s["polish"] = s["polish"] if s["polish"] in POLISHES else "none"
    s["iterations"] = min(ITERATIONS[1], max(ITERATIONS[0], int(s["iterations"])))
    s["hops"] = min(MAX_HOPS, max(0, int(s["hops"])))
    s["seed"] = int(s["seed"]) % 2**31
    return s


def render(structure: dict) -> str:
    """The ``construct_packing`` program of ``structure`` (normalised first)."""
    literal = repr(normalised(structure))
    return PROGRAM.replace("STRUCTURE_LITERAL", literal).replace("HOP_CPU_S", repr(HOP_CPU_S))


def parse(source: str) -> dict | None:
    """The structure of a program ``render`` wrote, or None for any other program."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["STRUCTURE"]:
            try:
                structure = ast.literal_eval(stmt.value)
                return structure if render(structure) == source else None
            except (ValueError, TypeError, KeyError, SyntaxError):
                return None
    return None


def structure_of(source: str) -> dict:
    """The structure of a rendered program, or the seed's for any other program."""
    return parse(source) or normalised(SEED_STRUCTURE)


def describe(s: dict) -> str:
    """One line naming a structure's parts (a child's summary)."""
    return (f"{s['family']} {s['counts']}, jitter {s['jitter']} seed {s['seed']}, polish {s['polish']} "
            f"x{s['iterations']} with {s['hops']} hops")


def constant_values(structure: dict) -> list[float]:
    """The structure's constants (``CONSTANTS`` order, a layer field's values in turn)."""
    values: list[float] = []
    for field in CONSTANTS:
        values += structure[field] if field in LAYER_FIELDS else [structure[field]]
    return values


def with_constant_values(structure: dict, values: list[float]) -> dict:
    """``structure`` with its constants (``constant_values`` order) set to ``values``."""
    child, at = dict(structure), 0
    for field in CONSTANTS:
        width = len(structure[field]) if field in LAYER_FIELDS else 1
        chunk = list(values[at:at + width])
        child[field] = chunk if field in LAYER_FIELDS else chunk[0]
        at += width
    return child


def layer_total(structure: dict) -> int:
    """How many circles the structure's layers hold (the n it was shaped for)."""
    return sum(structure["counts"])

