"""The `grammar` proposer's edits of circle packing structures (``circle_program``):
structure mutations, crossover of sub-parts, and constant jitter (issue 14).

Operators, each returning a new normalised structure (the parent is not changed):
- ``circle_layout``: switch the layout family; the new family's default layers for the
  parent's number of circles (rows: hexagonal rows of alternating offset; rings: a
  centre circle and rings of 6k);
- ``circle_counts``: move one circle from one layer to another, split a layer in two,
  or merge two adjacent layers (the number of circles is kept);
- ``circle_polish``: another polish, the iteration limit doubled or halved, or the
  number of basin hops changed by -4..+4 (without a polish: always a polish, since
  iterations and hops do nothing then);
- ``circle_constant``: each constant (``CONSTANTS``) plus N(0, its step), clipped to
  its bounds;
- ``circle_seed``: a new jitter seed (and, when the jitter is 0, a jitter of one step);
- ``circle_crossover``: with two parents, either one part (layout, placement or
  polish; ``PARTS``) of parent B in parent A, or, for two layouts of one family, A's
  first layers and B's remaining ones, recounted to A's number of circles.
Pure: randomness only from the caller's ``random.Random``.
"""

from __future__ import annotations

import math
import random

from tasks.proposers import circle_program as cp

PARTS = {
    "layout": ("family", "counts", "sizes", "twists", "squareness"),
    "placement": ("margin", "jitter", "seed"),
    "polish": ("polish", "iterations", "hops", "hop_size"),
}
OPERATORS = ("circle_layout", "circle_counts", "circle_polish", "circle_constant", "circle_seed")


def default_layers(family: str, total: int) -> dict:
    """The layers of ``family`` for ``total`` circles: rings of 6k around one centre
    circle, or about sqrt(total) hexagonal rows."""
    if family == "rings":
        counts, k = [1], 1
        while sum(counts) < total:
            counts.append(min(6 * k, total - sum(counts)))
            k += 1
        return {"counts": counts, "sizes": [min(0.7, 0.19 * k) for k in range(len(counts))],
                "twists": [0.0] * len(counts)}
    rows = max(1, round(math.sqrt(total)))
    counts = [total // rows + (1 if k < total % rows else 0) for k in range(rows)]
    return {"counts": counts, "sizes": [0.0] * rows, "twists": [0.5 * (k % 2) for k in range(rows)]}


def switch_layout(s: dict, rng: random.Random) -> dict:
    family = "rows" if s["family"] == "rings" else "rings"
    return cp.normalised({**s, "family": family, **default_layers(family, cp.layer_total(s))})


def recount(s: dict, rng: random.Random) -> dict:
    """Move one circle between layers, split a layer or merge two (the total is kept)."""
    counts, sizes, twists = list(s["counts"]), list(s["sizes"]), list(s["twists"])
    moves = ["move"] * (len(counts) > 1) + ["split"] * any(c > 1 for c in counts) + ["merge"] * (len(counts) > 1)
    move = rng.choice(moves) if moves else "none"
    if move == "move":
        donors = [k for k, c in enumerate(counts) if c > 1]
        if donors:
            a = rng.choice(donors)
            b = rng.choice([k for k in range(len(counts)) if k != a])
            counts[a] -= 1
            counts[b] += 1
    elif move == "split":
        k = rng.choice([k for k, c in enumerate(counts) if c > 1])
        part = rng.randint(1, counts[k] - 1)
        counts[k:k + 1] = [part, counts[k] - part]
        sizes.insert(k + 1, sizes[k])
        twists.insert(k + 1, twists[k] + 0.3)
    elif move == "merge":
        k = rng.randrange(len(counts) - 1)
        counts[k:k + 2] = [counts[k] + counts[k + 1]]
        del sizes[k + 1], twists[k + 1]
    return cp.normalised({**s, "counts": counts, "sizes": sizes, "twists": twists})


def repolish(s: dict, rng: random.Random) -> dict:
    """Another polish, iterations doubled or halved, or hops changed; a structure with
    no polish always gains one (any other change would do nothing)."""
    change = "method" if s["polish"] == "none" else rng.choice(("method", "iterations", "hops"))
    if change == "method":
        return cp.normalised({**s, "polish": rng.choice([p for p in cp.POLISHES if p != s["polish"]])})
    if change == "iterations":
        return cp.normalised({**s, "iterations": s["iterations"] * rng.choice((2, 0.5))})
    return cp.normalised({**s, "hops": s["hops"] + rng.choice((-4, -3, -2, -1, 1, 2, 3, 4))})


def jitter_constants(s: dict, rng: random.Random) -> dict:
    """Each constant plus N(0, its step) (the rule of ``circle_constant``)."""
    child = dict(s)
    for field, (_, _, step) in cp.CONSTANTS.items():
        if field in cp.LAYER_FIELDS:
            child[field] = [v + rng.gauss(0.0, step) for v in s[field]]
        else:
            child[field] = s[field] + rng.gauss(0.0, step)
    return cp.normalised(child)


def reseed(s: dict, rng: random.Random) -> dict:
    jitter = s["jitter"] or cp.CONSTANTS["jitter"][2]
    return cp.normalised({**s, "seed": rng.randrange(2**31), "jitter": jitter})


MUTATIONS = {"circle_layout": switch_layout, "circle_counts": recount, "circle_polish": repolish,
             "circle_constant": jitter_constants, "circle_seed": reseed}


def crossover(a: dict, b: dict, rng: random.Random) -> dict:
    """One part of ``b`` in ``a``, or (one family) ``a``'s first layers and ``b``'s rest."""
    if a["family"] == b["family"] and len(a["counts"]) > 1 and len(b["counts"]) > 1 and rng.random() < 0.5:
        cut = rng.randint(1, min(len(a["counts"]), len(b["counts"])) - 1)
        child = {**a, **{f: a[f][:cut] + b[f][cut:] for f in cp.LAYER_FIELDS}}
        return cp.normalised(fit_total(child, cp.layer_total(a)))
    part = rng.choice(sorted(PARTS))
    child = {**a, **{field: b[field] for field in PARTS[part]}}
    return cp.normalised(fit_total(child, cp.layer_total(a)))


def fit_total(s: dict, total: int) -> dict:
    """``s`` with its last layers grown or cut so the layers hold ``total`` circles."""
    counts = list(s["counts"])
    while sum(counts) > total and counts:
        excess = sum(counts) - total
        counts[-1] -= min(excess, counts[-1])
        if counts[-1] == 0:
            counts.pop()
    if sum(counts) < total:
        counts[-1:] = [counts[-1] + total - sum(counts)] if counts else [total]
    layers = len(counts)
    return {**s, "counts": counts, "sizes": s["sizes"][:layers], "twists": s["twists"][:layers]}


def child_structure(a: dict, b: dict | None, rng: random.Random, crossover_rate: float) -> tuple[str, dict]:
    """(operator, child) of one draw: crossover with probability ``crossover_rate`` when
    there is a second parent, else one of ``OPERATORS`` with equal weight."""
    if b is not None and rng.random() < crossover_rate:
        return "circle_crossover", crossover(a, b, rng)
    operator = rng.choice(OPERATORS)
    return operator, MUTATIONS[operator](a, rng)
