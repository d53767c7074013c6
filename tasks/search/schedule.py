"""The scheduling policy and the tree search it drives, pure.

A policy decides which node of a search tree to expand next (UCB over the nodes'
scores), how many children to open at once (`width`: one parallel batch), and when to
stop (`patience` batches without a new best, or the attempt budget). `search` runs a
policy against an oracle that reveals a node's next children: the real oracle proposes
and evaluates programs; the replay oracle (`replay`) returns only children a recorded
tree already holds, in the order they were recorded, and answers "unavailable" for any
other request: replay reorders recorded nodes, it never reveals a never-tried branch.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from statistics import fmean
from typing import Callable, Mapping, Sequence


@dataclass(frozen=True)
class Policy:
    ucb_c: float = 0.5
    """Exploration constant of UCB: 0 always expands the best node."""
    width: int = 4
    """Children opened per expansion (one parallel batch)."""
    patience: int = 4
    """Batches without a new best before the search stops."""

    def __post_init__(self) -> None:
        if self.ucb_c < 0 or self.width < 1 or self.patience < 1:
            raise ValueError(f"policy needs ucb_c >= 0, width >= 1, patience >= 1, got {self}")

    def code(self) -> str:
        """The policy as the artifact the loop stores (canonical JSON)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_code(cls, code: str) -> Policy:
        return cls(**json.loads(code))


@dataclass(frozen=True)
class Node:
    node_id: str
    parent_id: str | None
    score: float
    """Select score; a failed program holds the suite's floor."""


@dataclass
class Tree:
    """A search tree: nodes in the order they were revealed; children per parent in order."""

    tree_id: str
    nodes: dict[str, Node] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, tree_id: str, nodes: Sequence[Node]) -> Tree:
        tree = cls(tree_id)
        for node in nodes:
            tree.add(node)
        return tree

    def add(self, node: Node) -> None:
        self.nodes[node.node_id] = node
        if node.parent_id is not None:
            self.children.setdefault(node.parent_id, []).append(node.node_id)

    @property
    def root(self) -> Node:
        return next(iter(self.nodes.values()))

    @property
    def best(self) -> float:
        return max(n.score for n in self.nodes.values())


@dataclass(frozen=True)
class SearchTrace:
    """What one search did: the revealed nodes in order, and its costs."""

    revealed: tuple[Node, ...]
    batches: int
    """Latency: sequential expansion batches."""
    unavailable: int
    """Requests for children the oracle could not give (replay: never recorded)."""

    @property
    def attempts(self) -> int:
        """Children evaluated (the root is not an attempt)."""
        return len(self.revealed) - 1

    @property
    def best_found(self) -> float:
        return max(n.score for n in self.revealed)

    def attempts_to(self, target: float) -> int | None:
        """Attempts until a node scored at least `target`; None if none did."""
        for i, node in enumerate(self.revealed):
            if node.score >= target:
                return i
        return None


Oracle = Callable[[Node, int, int], Sequence[Node | None]]
"""(node, children already requested of it, how many more) -> the revealed children,
None for each one the oracle cannot give."""


def choose(nodes: Sequence[Node], requested: Mapping[str, int], c: float) -> Node:
    """The node UCB picks: scores min-max normalised over the revealed nodes, plus
    c * sqrt(ln(total requests + 1) / (1 + requests of this node)); the first revealed
    node wins a tie."""
    low, high = min(n.score for n in nodes), max(n.score for n in nodes)
    span = high - low if high > low else 1.0
    total = sum(requested.values())

    def ucb(node: Node) -> float:
        bonus = c * math.sqrt(math.log(total + 1) / (1 + requested.get(node.node_id, 0)))
        return (node.score - low) / span + bonus

    return max(nodes, key=ucb)  # max keeps the first of equal keys


def search(policy: Policy, root: Node, expand: Oracle, max_attempts: int) -> SearchTrace:
    """Run `policy` from `root` until it stops (patience) or `max_attempts` children were
    revealed; a batch that reveals nothing counts towards patience too."""
    revealed, requested = [root], {root.node_id: 0}
    best, stale, batches, unavailable = root.score, 0, 0, 0
    while stale < policy.patience and len(revealed) - 1 < max_attempts:
        node = choose(revealed, requested, policy.ucb_c)
        width = min(policy.width, max_attempts - (len(revealed) - 1))
        answers = expand(node, requested[node.node_id], width)
        requested[node.node_id] += width
        batches += 1
        found = [a for a in answers if a is not None]
        unavailable += len(answers) - len(found)
        for child in found:
            revealed.append(child)
            requested.setdefault(child.node_id, 0)
        improved = max((c.score for c in found), default=-math.inf) > best
        best = max([best, *(c.score for c in found)])
        stale = 0 if improved else stale + 1
    return SearchTrace(tuple(revealed), batches, unavailable)


def replay_oracle(tree: Tree) -> Oracle:
    """The recorded tree as an oracle: the k-th request of a node's children gets its k-th
    recorded child; past the recorded ones, "unavailable" (None)."""

    def expand(node: Node, start: int, width: int) -> list[Node | None]:
        recorded = tree.children.get(node.node_id, [])
        return [tree.nodes[recorded[k]] if k < len(recorded) else None for k in range(start, start + width)]

    return expand


def replay(policy: Policy, tree: Tree) -> SearchTrace:
    """`policy` rehearsed on a recorded tree, with the tree's size as the attempt budget."""
    return search(policy, tree.root, replay_oracle(tree), max_attempts=len(tree.nodes) - 1)


def replay_cost(trace: SearchTrace, tree: Tree) -> float:
    """Lower is better. Reaching the tree's best: the share of the tree's attempts it took
    (in (0, 1]); not reaching it: 1 plus the share of the root-to-best gap left open (in
    (1, 2]). The paper leaves the combination open; quality and attempts are also
    recorded apart."""
    size = max(len(tree.nodes) - 1, 1)
    hit = trace.attempts_to(tree.best)
    if hit is not None:
        return max(hit, 1) / size if tree.best > tree.root.score else 0.0
    gap = tree.best - tree.root.score
    return 1.0 + (tree.best - trace.best_found) / gap


@dataclass(frozen=True)
class ReplayEval:
    """One policy on one recorded tree (the spec's replay_evals row)."""

    tree_id: str
    best_found: float
    attempts: int
    latency: int
    unrecorded_requests: int
    cost: float


@dataclass(frozen=True)
class Rehearsal:
    policy: Policy
    evals: tuple[ReplayEval, ...]

    @property
    def score(self) -> float:
        """Mean replay cost over the pool (lower is better)."""
        return fmean(e.cost for e in self.evals)


def rehearse(policy: Policy, trees: Sequence[Tree]) -> Rehearsal:
    def row(tree: Tree, trace: SearchTrace) -> ReplayEval:
        return ReplayEval(tree.tree_id, trace.best_found, trace.attempts, trace.batches, trace.unavailable,
                          replay_cost(trace, tree))

    return Rehearsal(policy, tuple(row(tree, replay(policy, tree)) for tree in trees))
