"""The replay pool: recorded search trees read back from a store, pure over rows.

A dream_rsi run records each real round's tree as `dream_node` distillates (one per
node, in the order the search revealed them). Any other run's candidates form one tree
too (an evolve run's archive: parent -> children in the order they were proposed), each
node scored by its select mean, so earlier evolve runs of the store can rehearse
schedulers (`dream_rsi.replay_runs`)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Iterable, Sequence

from schemas.rows import CandidateRow, DistillateRow, ScoreRow
from tasks.search.archive import split_means
from tasks.search.schedule import Node, Tree

NODE_KIND = "dream_node"
ROUND_KIND = "dream_real_round"
REPLAY_KIND = "dream_replay_eval"


def node_trees(distillates: Iterable[DistillateRow], before_round: int | None = None) -> list[Tree]:
    """The trees a dream_rsi run recorded (rounds before `before_round`), in round order."""
    by_round: dict[int, list[tuple[int, Node]]] = defaultdict(list)
    tree_ids: dict[int, str] = {}
    for row in distillates:
        if row.kind != NODE_KIND or (before_round is not None and row.round >= before_round):
            continue
        body = json.loads(row.content)
        by_round[row.round].append((body["order"], Node(body["node_id"], body["parent_node_id"], body["score"])))
        tree_ids[row.round] = body["tree_id"]
    return [Tree.of(tree_ids[r], [node for _, node in sorted(by_round[r], key=lambda p: p[0])])
            for r in sorted(by_round)]


def archive_tree(tree_id: str, candidates: Sequence[CandidateRow], scores: Iterable[ScoreRow], metric: str) -> Tree | None:
    """A run's candidates as one tree rooted at its round-0 candidate; a candidate with no
    select score (never executed) and its descendants are left out. None when the run
    has no scored root."""
    means = split_means(scores, metric)
    ordered = sorted(enumerate(candidates), key=lambda p: (p[1].round, p[0]))
    nodes: list[Node] = []
    kept: set[str] = set()
    for _, row in ordered:
        score = means.get((row.candidate_id, "select"))
        parent = row.parent_ids[0] if row.parent_ids else None
        if score is None or row.candidate_id in kept or (parent is None) != (not nodes) or (parent and parent not in kept):
            continue
        nodes.append(Node(row.candidate_id, parent, score))
        kept.add(row.candidate_id)
    return Tree.of(tree_id, nodes) if nodes else None


def run_trees(store, run_id: str, metric: str, before_round: int | None = None) -> list[Tree]:
    """The trees a run of the store recorded: a dream_rsi run's real rounds (those before
    `before_round`), any other run's archive as one tree (none when it has no scored root)."""
    recorded = node_trees(store.read_rows("distillates", run_id), before_round)
    if recorded:
        return recorded
    tree = archive_tree(run_id, store.read_rows("candidates", run_id), store.read_rows("scores", run_id), metric)
    return [tree] if tree else []
