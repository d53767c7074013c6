"""The scheduler and replay on hand-built trees: replay only reorders recorded nodes,
unrecorded requests are counted, and UCB / patience / width behave as written."""

import math

import pytest

from tasks.search.schedule import Node, Policy, Tree, choose, replay, replay_cost, search

# root a (1.0) has children b (2.0), c (0.5), d (3.0) in that recorded order; b has e (5.0)
TREE = Tree.of("t", [Node("a", None, 1.0), Node("b", "a", 2.0), Node("c", "a", 0.5), Node("d", "a", 3.0),
                     Node("e", "b", 5.0)])


def test_a_greedy_policy_of_width_one_follows_the_best_revealed_node():
    trace = replay(Policy(ucb_c=0.0, width=1, patience=2), TREE)
    # a -> b (2 > 1, new best); b is best -> e (5, new best); e has no children: unavailable,
    # stale 1; e again: unavailable, stale 2 -> stop
    assert [n.node_id for n in trace.revealed] == ["a", "b", "e"]
    assert (trace.attempts, trace.batches, trace.unavailable) == (2, 4, 2)
    assert trace.best_found == 5.0 and trace.attempts_to(5.0) == 2
    assert replay_cost(trace, TREE) == pytest.approx(2 / 4)


def test_a_wide_batch_takes_children_in_recorded_order_and_never_invents_one():
    trace = replay(Policy(ucb_c=0.0, width=4, patience=1), TREE)
    # a: b, c, d revealed and a 4th request unavailable; best d (3.0): the attempt budget
    # (the tree's 4 children, 1 left) trims the batch to 1, nothing recorded under d:
    # unavailable, stale 1 -> stop; e is never reached
    assert [n.node_id for n in trace.revealed] == ["a", "b", "c", "d"]
    assert (trace.unavailable, trace.batches) == (1 + 1, 2)
    assert trace.attempts_to(5.0) is None
    # not reaching the tree's best: 1 + share of the root-to-best gap left open
    assert replay_cost(trace, TREE) == pytest.approx(1 + (5.0 - 3.0) / (5.0 - 1.0))


def test_replay_reveals_only_recorded_nodes_whatever_the_policy():
    for c in (0.0, 0.5, 2.0):
        for width in (1, 2, 3, 5):
            for patience in (1, 2, 4):
                trace = replay(Policy(c, width, patience), TREE)
                ids = [n.node_id for n in trace.revealed]
                assert len(ids) == len(set(ids)) and set(ids) <= set(TREE.nodes)
                for node in trace.revealed[1:]:  # each child comes after its parent
                    assert ids.index(node.parent_id) < ids.index(node.node_id)
                assert trace.attempts <= len(TREE.nodes) - 1


def test_ucb_bonus_prefers_the_less_requested_node():
    nodes = [Node("x", None, 1.0), Node("y", "x", 0.9), Node("z", "x", 0.0)]  # normalised 1.0, 0.9, 0.0
    assert choose(nodes, {"x": 0, "y": 0, "z": 0}, 0.0).node_id == "x"
    # x requested 8 times, y and z never: bonus(x) = sqrt(ln 9 / 9), bonus(y) = bonus(z) = sqrt(ln 9)
    bonus_x, bonus_y = math.sqrt(math.log(9) / 9), math.sqrt(math.log(9))
    assert 0.9 + bonus_y > 1.0 + bonus_x and 0.9 + bonus_y > 0.0 + bonus_y
    assert choose(nodes, {"x": 8, "y": 0, "z": 0}, 1.0).node_id == "y"


def test_a_search_stops_at_its_attempt_budget_and_trims_the_last_batch():
    counter = iter(range(1000))

    def always_better(node, start, width):
        return [Node(f"n{next(counter)}", node.node_id, node.score + 1) for _ in range(width)]

    trace = search(Policy(0.0, 3, 5), Node("r", None, 0.0), always_better, max_attempts=7)
    assert trace.attempts == 7 and trace.batches == 3  # 3 + 3 + 1


def test_a_policy_round_trips_through_its_code_and_refuses_nonsense():
    policy = Policy(0.25, 3, 6)
    assert Policy.from_code(policy.code()) == policy
    with pytest.raises(ValueError):
        Policy(-1.0, 1, 1)
