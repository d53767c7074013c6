"""A grammar of a problem's features, and the three edits the `grammar` proposer makes
with it (issue 14, "Program search that finds something"): grow a random expression,
replace a subtree with a fresh one, and cross two programs' expressions at subtrees.

Bin packing's ``priority(item, bins)`` is one expression over the features
- terminals: ``item``, ``bins``, ``gap`` (= ``bins - item``, the room the item leaves)
  and numeric constants;
- unary: negation, ``x * x``, ``np.sqrt(np.abs(x))``, ``np.log1p(np.abs(x))``,
  ``np.exp(-np.abs(x))``;
- binary: ``+``, ``-``, ``*``, guarded division ``x / (np.abs(y) + 1e-9)``, and the
  comparison ``x <= y`` (as 0.0/1.0, ``np.asarray(x <= y, dtype=float)``);
rendered as ``score = EXPR`` in a fixed program (``render``) and read back by ``parse``.
Every expression the grammar makes uses only these names (``names_of`` checks it), so a
generated program is total on positive inputs: no division by zero, no log of a negative.

Pure: randomness only from the caller's ``random.Random``; trees are ``ast`` nodes.
"""

from __future__ import annotations

import ast
import copy
import random

TERMINALS = ("item", "bins", "gap")
UNARY = ("neg", "square", "sqrt", "log", "expdecay")
BINARY = ("add", "sub", "mul", "div", "le")
FEATURE_NAMES = frozenset({"item", "bins", "gap", "np", "float"})
FEATURE_CALLS = frozenset({"np.sqrt", "np.abs", "np.log1p", "np.exp", "np.asarray"})
EPS = 1e-9

PROGRAM = '''"""Online bin packing priority from the grammar of item, bins and gap (grammar proposer)."""

import numpy as np


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """One score per fitting bin; the highest wins."""
    gap = bins - item
    score = {expr}
    return np.asarray(score, dtype=float) + np.zeros_like(bins)
'''
"""The program every grammar expression is rendered into: the ``+ zeros_like(bins)``
gives one score per bin even when the expression does not mention ``bins``."""

BEST_FIT = "-gap"


def _call(name: str, arg: ast.expr) -> ast.expr:
    return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), [arg], [])


def unary(op: str, x: ast.expr) -> ast.expr:
    """The grammar's unary ``op`` applied to ``x``."""
    if op == "neg":
        return ast.UnaryOp(ast.USub(), x)
    if op == "square":
        return ast.BinOp(x, ast.Mult(), copy.deepcopy(x))
    if op == "sqrt":
        return _call("sqrt", _call("abs", x))
    if op == "log":
        return _call("log1p", _call("abs", x))
    if op == "expdecay":
        return _call("exp", ast.UnaryOp(ast.USub(), _call("abs", x)))
    raise ValueError(f"unknown unary operator {op!r}; known: {UNARY}")


def binary(op: str, x: ast.expr, y: ast.expr) -> ast.expr:
    """The grammar's binary ``op`` of ``x`` and ``y``."""
    simple = {"add": ast.Add, "sub": ast.Sub, "mul": ast.Mult}
    if op in simple:
        return ast.BinOp(x, simple[op](), y)
    if op == "div":
        return ast.BinOp(x, ast.Div(), ast.BinOp(_call("abs", y), ast.Add(), ast.Constant(EPS)))
    if op == "le":
        return ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "asarray", ast.Load()),
                        [ast.Compare(x, [ast.LtE()], [y])], [ast.keyword("dtype", ast.Name("float", ast.Load()))])
    raise ValueError(f"unknown binary operator {op!r}; known: {BINARY}")


CONSTANT_DECADES = (-2.0, 2.3)
"""A fresh constant's magnitude: 0.01 to 200, log-uniform. The features are in the
instances' own units (capacities 100 and 150, items from 1 up to the capacity), so a
threshold on ``gap`` such as "less room than the smallest item" needs tens."""


def constant(rng: random.Random) -> ast.Constant:
    """A constant on a log scale of either sign, rounded to 3 significant digits."""
    value = rng.choice((-1.0, 1.0)) * 10 ** rng.uniform(*CONSTANT_DECADES)
    return ast.Constant(float(f"{value:.3g}"))


def grow(rng: random.Random, depth: int) -> ast.expr:
    """A random expression of at most ``depth`` operator levels."""
    if depth <= 0 or rng.random() < 0.3:
        if rng.random() < 0.25:
            return constant(rng)
        return ast.Name(rng.choice(TERMINALS), ast.Load())
    if rng.random() < 0.35:
        return unary(rng.choice(UNARY), grow(rng, depth - 1))
    return binary(rng.choice(BINARY), grow(rng, depth - 1), grow(rng, depth - 1))


def render(expr: ast.expr) -> str:
    """The program of ``expr``."""
    return PROGRAM.format(expr=ast.unparse(ast.fix_missing_locations(expr)))


def parse(source: str) -> ast.expr | None:
    """The expression of a program ``render`` wrote (rendering it again gives the same
    text), or None for any other program."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "priority":
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and [ast.unparse(t) for t in stmt.targets] == ["score"]:
                    return stmt.value if render(stmt.value) == source else None
    return None


def names_of(expr: ast.expr) -> tuple[set[str], set[str]]:
    """(names, called functions) an expression uses: the grammar check of a program."""
    names = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    calls = {ast.unparse(n.func) for n in ast.walk(expr) if isinstance(n, ast.Call)}
    return names, calls


def in_grammar(expr: ast.expr) -> bool:
    """Whether ``expr`` uses only the grammar's features and functions."""
    names, calls = names_of(expr)
    return names <= FEATURE_NAMES and calls <= FEATURE_CALLS


def _slots(expr: ast.expr) -> list[tuple[ast.AST, str, int | None]]:
    """Every subtree position of ``expr`` as (parent, field, index), the root excluded;
    the ``np.abs`` guards and the division's epsilon are part of their operator."""
    slots = []
    for parent in ast.walk(expr):
        if isinstance(parent, (ast.keyword, ast.Attribute)):
            continue  # dtype=float and the np. of a call are part of their operator
        for field, value in ast.iter_fields(parent):
            if isinstance(value, ast.expr) and field not in ("func", "ctx") and not _is_guard(value):
                slots.append((parent, field, None))
            elif isinstance(value, list):
                slots.extend((parent, field, i) for i, v in enumerate(value) if isinstance(v, ast.expr))
    return slots


def _is_guard(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == EPS


def _get(slot):
    parent, field, index = slot
    value = getattr(parent, field)
    return value if index is None else value[index]


def _set(slot, node: ast.expr) -> None:
    parent, field, index = slot
    if index is None:
        setattr(parent, field, node)
    else:
        getattr(parent, field)[index] = node


def subtrees(expr: ast.expr) -> list[ast.expr]:
    """The root and every subtree of ``expr``."""
    return [expr] + [_get(s) for s in _slots(expr)]


def replace_subtree(expr: ast.expr, rng: random.Random, depth: int = 2) -> ast.expr:
    """A copy of ``expr`` with one subtree (the root included) regrown to ``depth``."""
    child = copy.deepcopy(expr)
    slots = _slots(child)
    pick = rng.randrange(len(slots) + 1)
    if pick == len(slots):
        return grow(rng, depth)
    _set(slots[pick], grow(rng, depth))
    return child


def wrap(expr: ast.expr, rng: random.Random) -> ast.expr:
    """``expr`` combined with a fresh small term: the structure grows by one operator."""
    return binary(rng.choice(("add", "sub", "mul")), copy.deepcopy(expr), grow(rng, 1))


def crossover(a: ast.expr, b: ast.expr, rng: random.Random) -> ast.expr:
    """A copy of ``a`` with one of its subtrees replaced by a copy of one of ``b``'s."""
    child = copy.deepcopy(a)
    donor = copy.deepcopy(rng.choice(subtrees(b)))
    slots = _slots(child)
    if not slots:
        return donor
    _set(slots[rng.randrange(len(slots))], donor)
    return child


def constants_of(expr: ast.expr) -> list[ast.Constant]:
    """The numeric constants a structure exposes, in walk order (the division's guard
    epsilon is not one of them)."""
    return [n for n in ast.walk(expr) if isinstance(n, ast.Constant) and isinstance(n.value, float)
            and n.value != EPS]


def with_constants(expr: ast.expr, values: list[float]) -> ast.expr:
    """A copy of ``expr`` with its constants (``constants_of`` order) set to ``values``."""
    child = copy.deepcopy(expr)
    slots = constants_of(child)
    if len(slots) != len(values):
        raise ValueError(f"expression has {len(slots)} constants, got {len(values)} values")
    for node, value in zip(slots, values):
        node.value = float(value)
    return child


def size(expr: ast.expr) -> int:
    """The number of nodes in ``expr`` (the bloat limit's measure)."""
    return sum(1 for _ in ast.walk(expr))
