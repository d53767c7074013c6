"""The dream: TPE proposes policies scored only in replay, the old policy is always a
candidate, so the pick never replays worse than it."""

from tasks.loops.dream_rsi.rewriter import pick, rewrite
from tasks.search.schedule import Node, Policy, Tree, rehearse

# a deep chain: only patience and width 1 down the chain reach the best cheaply
# (r's first recorded child c1 leads down a chain to the best, c3; six weak siblings follow it)
CHAIN = Tree.of("chain", [Node("r", None, 0.0), Node("c1", "r", 0.1), *(Node(f"w{i}", "r", -1.0) for i in range(6)),
                          Node("c2", "c1", 0.2), Node("c3", "c2", 0.3)])


def test_the_old_policy_is_rehearsed_first_and_the_pick_never_replays_worse():
    old = Policy(1.5, 8, 1)
    rehearsals = rewrite(old, [CHAIN], trials=25, seed=3)
    assert rehearsals[0].policy == old
    assert len({r.policy for r in rehearsals}) == len(rehearsals)
    chosen = pick(rehearsals)
    assert chosen.score <= rehearsals[0].score
    # the wide old policy spends all 9 attempts; width 1 goes r -> c1 -> c2 -> c3 in 3
    assert rehearsals[0].score == 1.0
    assert chosen.score == 3 / 9 and chosen.policy.width == 1


def test_a_rewrite_is_deterministic_for_a_seed():
    a = [r.policy for r in rewrite(Policy(), [CHAIN], trials=10, seed=7)]
    b = [r.policy for r in rewrite(Policy(), [CHAIN], trials=10, seed=7)]
    assert a == b


def test_rehearsal_records_every_tree_and_a_tie_keeps_the_old_policy():
    flat = Tree.of("flat", [Node("r", None, 1.0), Node("x", "r", 0.0)])
    old, other = rehearse(Policy(), [CHAIN, flat]), rehearse(Policy(0.0, 1, 9), [CHAIN, flat])
    assert [e.tree_id for e in old.evals] == ["chain", "flat"]
    assert old.evals[1].cost == 0.0  # the root is the best of `flat`: every policy has it at once
    assert pick([old, rehearse(Policy(), [CHAIN, flat])]) is old
    assert pick([old, other]).score == min(old.score, other.score)
