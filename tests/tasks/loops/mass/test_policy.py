import torch

from tasks.loops.mass import policy as pol


def test_behaviour_cloning_learns_a_decision_per_template():
    p = pol.make_policy(["a", "b", "c"], 3)
    assert pol.greedy(p, "a") == (0, 0, 0)  # zero weights: p = 0.5, not > 0.5
    fit = pol.behaviour_clone(p, ["a", "a", "b", "b", "b"], [(1, 0, 1), (1, 0, 1), (0, 1, 0), (0, 1, 0), (0, 0, 0)],
                              epochs=200, lr=1.0)
    assert fit.examples == 5 and fit.epochs == 200
    assert pol.greedy(p, "a") == (1, 0, 1)
    assert pol.greedy(p, "b") == (0, 1, 0)  # the majority of b's examples
    assert pol.greedy(p, "c") == (0, 0, 0)  # no examples: only the shared bias, which leans off


def test_no_examples_leave_the_policy_unchanged_and_bytes_round_trip():
    p = pol.make_policy(["a", "b"], 2)
    before = pol.to_bytes(p)
    assert pol.behaviour_clone(p, [], [], epochs=50, lr=1.0).examples == 0
    assert pol.to_bytes(p) == before
    pol.behaviour_clone(p, ["b"], [(1, 1)], epochs=50, lr=1.0)
    q = pol.from_bytes(pol.to_bytes(p))
    assert q.templates == ("a", "b") and pol.greedy(q, "b") == (1, 1)
    assert torch.equal(q.linear.weight, p.linear.weight)
    assert pol.to_bytes(q) == pol.to_bytes(p)
