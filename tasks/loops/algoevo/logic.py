"""AlgoEvo's pure logic: the experience tree (UCB node choice, node statistics), the
experience card of one evaluation, pattern support over tasks with the promotion rule,
and the design skill's operator-family prior.

Departures from the paper (AlgoEvo), all documented in the README's loop entry:
- the agent is the `mutate` proposer restricted to single-parent operator families
  (constant, operator, compare, statement, swap_lines); a card's modification is the
  family and its edits, filled automatically; the paper's agent diagnoses and edits freely;
- the node-selection formula is not specified by the paper: here UCB1 over the node's
  best subtree score, min-max normalised over the task's valid nodes, plus
  ``c * sqrt(ln N / visits)`` (N: the task's evaluations so far); a node whose program
  failed is never expanded;
- a design pattern is an operator family; its effect on a task is the mean Δ (child −
  parent select score) of the task's valid cards of that family, ``raw`` or ``centred``
  (minus the mean Δ of all the task's valid cards, so "positive" reads "better than the
  task's average edit"); failed children carry no Δ (their size is the suite's floor);
- promotion: a family whose effect is positive on at least ``min_tasks`` (the paper: 2)
  distinct tasks, each with at least ``min_cards`` valid cards, is promoted; a promoted
  family's prior weight is ``boost`` (others 1)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import fmean
from typing import Iterable, Mapping, Sequence

FAMILIES = ("constant", "operator", "compare", "statement", "swap_lines")
"""The single-parent operator families of the `mutate` proposer (crossover needs two parents)."""


@dataclass(frozen=True)
class TreeNode:
    """A node of a task's experience tree: one evaluated program."""

    node_id: str
    parent: str | None
    score: float
    """The program's own select score (the suite's floor when it failed)."""
    valid: bool
    visits: int = 1
    """Evaluations in the node's subtree, itself included."""
    best: float = float("-inf")
    """Best valid score in the subtree (-inf when none is valid)."""
    depth: int = 0
    order: int = 0
    """Position of the node's evaluation in the task (0: the root)."""


def root_node(node_id: str, score: float, valid: bool) -> TreeNode:
    return TreeNode(node_id, None, score, valid, 1, score if valid else float("-inf"), 0, 0)


def add_child(tree: Mapping[str, TreeNode], node_id: str, parent: str, score: float, valid: bool) -> dict[str, TreeNode]:
    """The tree with a new evaluated child of ``parent``: its ancestors' visits grow by
    one and their best takes the child's score when it is valid and higher."""
    out = dict(tree)
    out[node_id] = TreeNode(node_id, parent, score, valid, 1, score if valid else float("-inf"),
                            tree[parent].depth + 1, len(tree))
    at: str | None = parent
    while at is not None:
        node = out[at]
        out[at] = replace(node, visits=node.visits + 1, best=max(node.best, score) if valid else node.best)
        at = node.parent
    return out


def ucb_values(tree: Mapping[str, TreeNode], c: float) -> dict[str, float]:
    """Each expandable (valid) node's UCB value: its subtree best, min-max normalised over
    the valid nodes (all 0.5 when they tie), plus ``c * sqrt(ln N / visits)``."""
    valid = [n for n in tree.values() if n.valid]
    if not valid:
        return {}
    lo, hi = min(n.best for n in valid), max(n.best for n in valid)
    total = sum(1 for _ in tree.values())
    span = hi - lo
    return {n.node_id: (0.5 if span <= 0 else (n.best - lo) / span) + c * math.sqrt(math.log(total) / n.visits)
            for n in valid}


def ucb_pick(tree: Mapping[str, TreeNode], c: float) -> str:
    """The node to expand: highest UCB value; ties go to the earliest node."""
    values = ucb_values(tree, c)
    if not values:
        raise ValueError("the experience tree has no valid node to expand (the root program failed)")
    return max(values, key=lambda nid: (values[nid], -tree[nid].order))


@dataclass(frozen=True)
class Card:
    """An experience card: one evaluation's modification, conditions, rationale and effect."""

    task_id: str
    eval_idx: int
    node: str
    parent: str
    family: str
    params: str
    """The edits as the proposer described them, e.g. "constant: 0.5 -> 0.61 in f (line 3)"."""
    before: float
    after: float
    valid: bool
    parent_depth: int
    parent_visits: int
    ucb: float
    prior_weight: float
    skill_ver: str

    @property
    def delta(self) -> float | None:
        """after − before; None for a failed child (its score is the suite's floor)."""
        return self.after - self.before if self.valid else None

    def conditions(self) -> dict:
        return {"parent_depth": self.parent_depth, "parent_visits": self.parent_visits, "ucb": self.ucb,
                "prior_weight": self.prior_weight, "valid": self.valid, "skill_ver": self.skill_ver}

    def rationale(self) -> str:
        """Why this edit was tried (the non-LLM agent's reasons, in words)."""
        return (f"expand node {self.parent[:12]} (UCB {self.ucb:.3f}, {self.parent_visits} visits); "
                f"family {self.family} drawn with skill prior weight {self.prior_weight:g}")


def task_effects(cards: Iterable[Card], centred: bool, min_cards: int) -> dict[str, dict[str, float]]:
    """family -> task -> mean Δ of the task's valid cards of that family (only tasks
    with at least ``min_cards`` of them); ``centred``: minus the task's mean Δ over all
    its valid cards."""
    by: dict[str, dict[str, list[float]]] = {}
    for card in cards:
        if card.delta is not None:
            by.setdefault(card.task_id, {}).setdefault(card.family, []).append(card.delta)
    out: dict[str, dict[str, float]] = {}
    for task, families in sorted(by.items()):
        base = fmean(d for ds in families.values() for d in ds) if centred else 0.0
        for family, deltas in sorted(families.items()):
            if len(deltas) >= min_cards:
                out.setdefault(family, {})[task] = fmean(deltas) - base
    return out


@dataclass(frozen=True)
class Pattern:
    family: str
    effects: dict[str, float]
    """task -> the family's mean Δ there (tasks with enough cards)."""
    support: tuple[str, ...]
    """Distinct tasks where the mean Δ is positive."""
    promoted: bool

    @property
    def desc(self) -> str:
        return f"operator family {self.family!r}: positive mean delta on {len(self.support)} task(s)"


def patterns(cards: Iterable[Card], min_tasks: int = 2, min_cards: int = 2, centred: bool = True) -> list[Pattern]:
    """Every family seen on some task, with its support; promoted iff its mean Δ is
    positive on at least ``min_tasks`` distinct tasks (a task where it is negative or
    zero does not count)."""
    effects = task_effects(cards, centred, min_cards)
    out = []
    for family in sorted(effects):
        support = tuple(t for t, v in sorted(effects[family].items()) if v > 0)
        out.append(Pattern(family, effects[family], support, len(support) >= min_tasks))
    return out


def family_weights(promoted: Iterable[str], boost: float) -> dict[str, float]:
    """The skill's operator-family prior: ``boost`` for a promoted family, 1 otherwise."""
    chosen = set(promoted)
    return {f: (boost if f in chosen else 1.0) for f in FAMILIES}


def skill_document(task_types: Sequence[str], promoted: Sequence[str], boost: float, previous: str | None) -> dict:
    """The design skill (one per task type; here every task is single-objective program
    search with the same operator families): editable components, interface constraints,
    how to evaluate, and the operator-family prior its promoted patterns earned."""
    return {
        "task_type": "single_objective_program_search",
        "tasks_seen": sorted(task_types),
        "editable_components": "the EVOLVE-BLOCK of the task's seed program (else every function body)",
        "interface_constraints": "keep the suite's entrypoint and its return format; no new imports",
        "evaluate": "mean of the task's primary metric on its select cases; a failed run scores the suite's floor",
        "operator_families": list(FAMILIES),
        "promoted_patterns": sorted(promoted),
        "family_weights": family_weights(promoted, boost),
        "previous": previous,
    }


def evals_to_reach(curve: Sequence[float], target: float) -> int | None:
    """Evaluations (the root is evaluation 0) until the best-so-far first reaches
    ``target``; None when it never does."""
    for i, best in enumerate(curve):
        if best >= target:
            return i
    return None


def best_so_far(scores: Sequence[float | None]) -> list[float]:
    """The running best of valid scores (None: a failed evaluation), -inf before any."""
    out, best = [], float("-inf")
    for s in scores:
        if s is not None:
            best = max(best, s)
        out.append(best)
    return out
