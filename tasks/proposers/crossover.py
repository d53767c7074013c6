"""Two-parent edits: a child of parent A that takes one top-level definition from
parent B.

The units of exchange are top-level functions and top-level constant assignments
(``NAME = <literal>``), matched by name and kind. For a same-named pair that differs:
- if the two differ only in numeric literals, the child blends them: each differing
  literal takes B's value with probability 1/2 (at least one does), which keeps A's code
  and mixes the two parents' tuning;
- otherwise A's definition is replaced by B's.
When no same-named pair differs but the whole programs differ only in numeric literals
(scripts without definitions), the blend applies to the whole module. Any other pair of
programs has no crossover site.
"""

from __future__ import annotations

import ast
import copy
import functools
import random

from tasks.proposers.ast_edits import FUNCTIONS, Site, is_number, walk


def short_id(candidate_id: str) -> str:
    """Candidate ids are sha256 hex digests; 12 characters identify one in a run."""
    return candidate_id[:12]


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return False
    return True


def _item(stmt: ast.stmt) -> tuple[str, str] | None:
    """(kind, name) of a top-level definition that crossover may exchange."""
    if isinstance(stmt, FUNCTIONS):
        return "function", stmt.name
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return ("constant", stmt.targets[0].id) if _is_literal(stmt.value) else None
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return ("constant", stmt.target.id) if _is_literal(stmt.value) else None
    return None


def _items(tree: ast.Module) -> dict[tuple[str, str], int]:
    """Index in ``tree.body`` of each exchangeable definition; a later definition of the
    same name wins, as it does when the module runs."""
    items: dict[tuple[str, str], int] = {}
    for index, stmt in enumerate(tree.body):
        key = _item(stmt)
        if key is not None:
            items[key] = index
    return items


def _numbers(node: ast.AST) -> list[ast.Constant]:
    return [n for n, _, _ in walk(node) if is_number(n)]


def _shape(node: ast.AST) -> str:
    """The node's structure with every numeric literal blanked out."""
    blank = copy.deepcopy(node)
    for constant in _numbers(blank):
        constant.value = None
    return ast.dump(blank)


def _replace(body: list[ast.stmt], index: int, donor_stmt: ast.stmt, label: str, rng: random.Random) -> str:
    line = body[index].lineno
    body[index] = copy.deepcopy(donor_stmt)
    return f"{label} (line {line})"


def _blend(mine: ast.AST, theirs: ast.AST, label: str, rng: random.Random) -> str:
    pairs = [
        (a, b) for a, b in zip(_numbers(mine), _numbers(theirs)) if repr(a.value) != repr(b.value)
    ]
    taken = [rng.random() < 0.5 for _ in pairs]
    if not any(taken):
        taken[rng.randrange(len(pairs))] = True
    changes = []
    for (a, b), take in zip(pairs, taken):
        if take:
            changes.append(f"{a.value!r} -> {b.value!r} (line {a.lineno})")
            a.value = b.value
    return f"{label}: " + ", ".join(changes)


def crossover_sites(tree: ast.Module, donor: ast.Module, donor_id: str) -> list[Site]:
    """Crossover sites of ``tree`` (parent A) against ``donor`` (parent B)."""
    theirs = _items(donor)
    sites: list[Site] = []
    for (kind, name), index in _items(tree).items():
        mine_stmt = tree.body[index]
        other = theirs.get((kind, name))
        if other is None or ast.dump(mine_stmt) == ast.dump(donor.body[other]):
            continue
        donor_stmt = donor.body[other]
        if _shape(mine_stmt) == _shape(donor_stmt):
            label = f"literals of {kind} {name} from {short_id(donor_id)}"
            sites.append(functools.partial(_blend, mine_stmt, donor_stmt, label))
        else:
            label = f"{kind} {name} from {short_id(donor_id)}"
            sites.append(functools.partial(_replace, tree.body, index, donor_stmt, label))
    if not sites and ast.dump(tree) != ast.dump(donor) and _shape(tree) == _shape(donor):
        label = f"literals of the module from {short_id(donor_id)}"
        sites.append(functools.partial(_blend, tree, donor, label))
    return sites
