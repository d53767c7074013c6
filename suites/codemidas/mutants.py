"""Trivial mutants of a reference function (CodeMidas's weak solvers): ``return None``,
``return <first argument>``, and one-site mutants that flip a comparison, swap an
arithmetic operator or shift an integer constant. A test set is reliable when it kills
the trivial ones; its mutation score is the share of all mutants it kills. Pure."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

FLIP_COMPARE = {ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
                ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In,
                ast.Is: ast.IsNot, ast.IsNot: ast.Is}
SWAP_BINOP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult,
              ast.Div: ast.Mult, ast.Mod: ast.FloorDiv, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd,
              ast.LShift: ast.RShift, ast.RShift: ast.LShift}
TRIVIAL = ("return_none", "return_first_arg")
"""The mutants every kept task's tests must kill."""


@dataclass(frozen=True)
class Mutant:
    """One mutant: its name (kind and site index) and source."""

    name: str
    source: str


def _with_body(node: ast.FunctionDef, body: list[ast.stmt]) -> str:
    clone = copy.deepcopy(node)
    doc = ast.get_docstring(node, clean=False)
    clone.body = ([ast.Expr(ast.Constant(doc))] if doc is not None else []) + body
    return ast.unparse(ast.fix_missing_locations(clone)) + "\n"


def trivial_mutants(source: str) -> list[Mutant]:
    """``return None`` and ``return <first parameter>`` with the original signature."""
    node = ast.parse(source).body[0]
    first = [*node.args.posonlyargs, *node.args.args][0].arg
    return [Mutant("return_none", _with_body(node, [ast.Return(ast.Constant(None))])),
            Mutant("return_first_arg", _with_body(node, [ast.Return(ast.Name(first, ast.Load()))]))]


def site_mutants(source: str, limit: int = 12) -> list[Mutant]:
    """One mutant per mutable site, in source order, at most ``limit``: each comparison
    operator flipped, each arithmetic operator swapped, each int constant + 1."""
    tree = ast.parse(source)
    sites = []
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Compare):
            sites += [("flip_compare", sub, i) for i, op in enumerate(sub.ops) if type(op) in FLIP_COMPARE]
        elif isinstance(sub, (ast.BinOp, ast.AugAssign)) and type(sub.op) in SWAP_BINOP:
            sites.append(("swap_binop", sub, 0))
        elif isinstance(sub, ast.Constant) and type(sub.value) is int:
            sites.append(("shift_const", sub, 0))
    mutants = []
    for index, (kind, _, op_index) in enumerate(sites[:limit]):
        clone = ast.parse(source)
        target = [s for s in ast.walk(clone)][[s for s in ast.walk(tree)].index(sites[index][1])]
        if kind == "flip_compare":
            target.ops[op_index] = FLIP_COMPARE[type(target.ops[op_index])]()
        elif kind == "swap_binop":
            target.op = SWAP_BINOP[type(target.op)]()
        else:
            target.value += 1
        mutants.append(Mutant(f"{kind}_{index}", ast.unparse(clone) + "\n"))
    return mutants


def all_mutants(source: str, limit: int = 12) -> list[Mutant]:
    """The trivial mutants then the site mutants."""
    return trivial_mutants(source) + site_mutants(source, limit)


def retrieval(module: str, name: str, arity: int) -> str:
    """A solver that imports the installed original and delegates to it: the leak every
    task cut from installed code has (the candidate's sandbox can import the module)."""
    params = ", ".join(f"a{i}" for i in range(arity))
    return f"def {name}({params}):\n    import {module} as m\n    return getattr(m, {name!r})({params})\n"
