"""Single-parent AST edits: find every site an operator could edit in a module, and
edit one of them in place.

A site is a closure ``(rng) -> description | None`` bound to one node of the tree, so
the caller picks a site uniformly and applies it without knowing the operator; ``None``
means the draw happened to change nothing (e.g. a jittered constant that rounds back to
its old value). Sites are listed in a fixed pre-order walk, so the same tree and the same
rng draws always give the same edit.

Choices made where the papers say nothing:
- constant: floats are multiplied by exp(N(0, 0.2)) and rounded to 4 significant digits
  (readable programs); a float 0.0 gets an additive N(0, 0.1) step instead; ints move by
  max(1, round(|v|·|N(0, 0.2)|)) in a random direction and stay ints. Integers that are
  clearly indices are never touched: any int inside a subscript (``a[0]``, ``x[:, 1]``,
  ``b[i + 1]``) and ints passed as ``axis=`` / ``dim=`` keywords. Booleans and non-finite
  floats are not numbers here.
- operator: + - * / swap among themselves and ** <-> *; operands that are string,
  f-string or sequence literals are skipped (``"a" + "b"`` has no numeric meaning).
  Augmented assignments (``x += 1``) count as binary operators.
- compare: each <, <=, >, >= in a comparison may become any of the other three.
- statement: a simple statement (assignment, augmented assignment, expression other than a
  docstring) inside a function body is deleted or duplicated; ``return`` is never
  touched and a body is never emptied.
- swap_lines: two adjacent simple statements of a function body swap when neither writes
  a name the other reads or writes. Attribute/subscript assignment and method calls count
  as writes of their root name; calls into imported modules count as pure (so two
  ``np.random`` draws may swap, which changes which draw each gets).
"""

from __future__ import annotations

import ast
import copy
import functools
import math
import random
from typing import Callable, Iterator

Site = Callable[[random.Random], "str | None"]

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
SIGMA = 0.2
ZERO_STEP = 0.1
INDEX_KEYWORDS = frozenset({"axis", "axes", "dim"})
ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
OPERATOR_SWAPS = {
    ast.Add: (ast.Sub, ast.Mult, ast.Div),
    ast.Sub: (ast.Add, ast.Mult, ast.Div),
    ast.Mult: (ast.Add, ast.Sub, ast.Div, ast.Pow),
    ast.Div: (ast.Add, ast.Sub, ast.Mult),
    ast.Pow: (ast.Mult,),
}
COMPARISONS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
NON_NUMERIC = (ast.JoinedStr, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp)
SIMPLE_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)
UNKNOWN = "<unknown>"
"""Written by a statement that assigns through an expression with no root name
(``f().x = 1``); such a statement never swaps."""


def walk(tree: ast.AST) -> Iterator[tuple[ast.AST, ast.AST | None, str]]:
    """Pre-order walk yielding (node, parent, name of the enclosing function or
    "<module>"); the order is the source order, which keeps site lists stable."""
    stack: list[tuple[ast.AST, ast.AST | None, str]] = [(tree, None, "<module>")]
    while stack:
        node, parent, scope = stack.pop()
        yield node, parent, scope
        inner = node.name if isinstance(node, FUNCTIONS) else scope
        children = list(ast.iter_child_nodes(node))
        stack.extend((child, node, inner) for child in reversed(children))


def where(scope: str, node: ast.AST) -> str:
    """Location phrase for summaries; line numbers refer to the parent's source."""
    line = getattr(node, "lineno", "?")
    return f"at module level (line {line})" if scope == "<module>" else f"in {scope} (line {line})"


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


# constant


def _index_constants(tree: ast.AST) -> set[int]:
    """ids of int literals that are clearly indices (see the module docstring)."""
    excluded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript):
            excluded.update(_int_literals(node.slice))
        elif isinstance(node, ast.keyword) and node.arg in INDEX_KEYWORDS:
            excluded.update(_int_literals(node.value))
    return excluded


def _int_literals(node: ast.AST) -> list[int]:
    return [id(n) for n in ast.walk(node) if isinstance(n, ast.Constant) and type(n.value) is int]


def is_number(node: ast.AST) -> bool:
    """A finite int or float literal (bool is an int subclass and is excluded)."""
    if not isinstance(node, ast.Constant) or type(node.value) not in (int, float):
        return False
    return math.isfinite(node.value)


def perturb(value: int | float, rng: random.Random) -> int | float:
    """A nearby value of the same type (the jitter rule is in the module docstring)."""
    if type(value) is int:
        step = max(1, round(abs(value) * abs(rng.gauss(0.0, SIGMA))))
        return value + step if rng.random() < 0.5 else value - step
    if value == 0.0:
        return float(f"{rng.gauss(0.0, ZERO_STEP):.3g}")
    return float(f"{value * math.exp(rng.gauss(0.0, SIGMA)):.4g}")


def _edit_constant(node: ast.Constant, negated: bool, scope: str, rng: random.Random) -> str | None:
    old = node.value
    new = perturb(old, rng)
    if new == old:
        return None
    node.value = new
    sign = "-" if negated else ""
    return f"{sign}{old!r} -> {sign}{new!r} {where(scope, node)}"


def constant_sites(tree: ast.Module) -> list[Site]:
    excluded = _index_constants(tree)
    return [
        functools.partial(
            _edit_constant, node, isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub), scope
        )
        for node, parent, scope in walk(tree)
        if is_number(node) and id(node) not in excluded
    ]


# operator


def _numeric_operand(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return not isinstance(node.value, (str, bytes))
    return not isinstance(node, NON_NUMERIC)


def _edit_operator(node: ast.BinOp | ast.AugAssign, scope: str, rng: random.Random) -> str:
    before = _snippet(node)
    node.op = rng.choice(OPERATOR_SWAPS[type(node.op)])()
    return f"`{before}` -> `{_snippet(node)}` {where(scope, node)}"


def operator_sites(tree: ast.Module) -> list[Site]:
    sites: list[Site] = []
    for node, _, scope in walk(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATOR_SWAPS:
            operands = (node.left, node.right)
        elif isinstance(node, ast.AugAssign) and type(node.op) in OPERATOR_SWAPS:
            operands = (node.target, node.value)
        else:
            continue
        if all(_numeric_operand(operand) for operand in operands):
            sites.append(functools.partial(_edit_operator, node, scope))
    return sites


# compare


def _edit_compare(node: ast.Compare, index: int, scope: str, rng: random.Random) -> str:
    before = _snippet(node)
    current = type(node.ops[index])
    node.ops[index] = rng.choice([op for op in COMPARISONS if op is not current])()
    return f"`{before}` -> `{_snippet(node)}` {where(scope, node)}"


def compare_sites(tree: ast.Module) -> list[Site]:
    return [
        functools.partial(_edit_compare, node, index, scope)
        for node, _, scope in walk(tree)
        if isinstance(node, ast.Compare)
        for index, op in enumerate(node.ops)
        if isinstance(op, COMPARISONS)
    ]


# statement and swap_lines


def function_bodies(tree: ast.Module) -> list[tuple[str, list[ast.stmt]]]:
    """Every statement list inside a function (its body and the bodies of its if/for/
    while/with/try blocks), paired with the function's name. Nested functions and
    classes are not descended into here; nested functions are listed as their own."""
    bodies: list[tuple[str, list[ast.stmt]]] = []
    for func, _, _ in walk(tree):
        if not isinstance(func, FUNCTIONS):
            continue
        pending: list[ast.AST] = [func]
        while pending:
            node = pending.pop(0)
            for _, value in ast.iter_fields(node):
                children = value if isinstance(value, list) else [value]
                if children and isinstance(children[0], ast.stmt):
                    bodies.append((func.name, value))
                pending.extend(
                    child
                    for child in children
                    if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case))
                    and not isinstance(child, FUNCTIONS + (ast.ClassDef,))
                )
    return bodies


def is_simple(stmt: ast.stmt, position: int) -> bool:
    """An assignment or expression statement that is not the body's docstring."""
    if not isinstance(stmt, SIMPLE_STATEMENTS):
        return False
    if position != 0 or not isinstance(stmt, ast.Expr):
        return True
    return not (isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str))


def _edit_statement(body: list[ast.stmt], index: int, action: str, scope: str, rng: random.Random) -> str:
    stmt = body[index]
    if action == "delete":
        del body[index]
    else:
        body.insert(index + 1, copy.deepcopy(stmt))
    return f"{action} `{_snippet(stmt)}` {where(scope, stmt)}"


def statement_sites(tree: ast.Module) -> list[Site]:
    sites: list[Site] = []
    for scope, body in function_bodies(tree):
        for index, stmt in enumerate(body):
            if not is_simple(stmt, index):
                continue
            if len(body) > 1:
                sites.append(functools.partial(_edit_statement, body, index, "delete", scope))
            sites.append(functools.partial(_edit_statement, body, index, "duplicate", scope))
    return sites


def _module_aliases(tree: ast.Module) -> frozenset[str]:
    """Names bound by top-level ``import x`` / ``import x as y``: calls on them are pure."""
    return frozenset(
        (alias.asname or alias.name).split(".")[0]
        for stmt in tree.body
        if isinstance(stmt, ast.Import)
        for alias in stmt.names
    )


def _root_name(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def reads_writes(stmt: ast.stmt, modules: frozenset[str]) -> tuple[set[str], set[str]]:
    """Names a statement reads and names it may change (rules in the module docstring)."""
    reads: set[str] = set()
    writes: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else writes).add(node.id)
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            writes.add(_root_name(node) or UNKNOWN)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            root = _root_name(node.func.value)
            if root is not None and root not in modules:
                writes.add(root)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        reads.add(stmt.target.id)
    return reads, writes


def _edit_swap(body: list[ast.stmt], index: int, scope: str, rng: random.Random) -> str:
    first, second = body[index], body[index + 1]
    body[index], body[index + 1] = second, first
    return f"swap `{_snippet(first)}` and `{_snippet(second)}` {where(scope, first)}"


def swap_sites(tree: ast.Module) -> list[Site]:
    modules = _module_aliases(tree)
    sites: list[Site] = []
    for scope, body in function_bodies(tree):
        for index in range(len(body) - 1):
            first, second = body[index], body[index + 1]
            if not (is_simple(first, index) and is_simple(second, index + 1)):
                continue
            reads1, writes1 = reads_writes(first, modules)
            reads2, writes2 = reads_writes(second, modules)
            unknown = UNKNOWN in writes1 | writes2
            if not (unknown or writes1 & (reads2 | writes2) or writes2 & reads1):
                sites.append(functools.partial(_edit_swap, body, index, scope))
    return sites


MUTATIONS: dict[str, Callable[[ast.Module], list[Site]]] = {
    "constant": constant_sites,
    "operator": operator_sites,
    "compare": compare_sites,
    "statement": statement_sites,
    "swap_lines": swap_sites,
}
"""Site finders of the single-parent operators, by MUTATION_OPERATORS name."""
