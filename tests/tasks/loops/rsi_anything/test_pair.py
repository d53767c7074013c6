"""RSI-Anything's pure pair logic on hand-built cases: the bandit update, code features,
ridge WM, the reliability check and the compatibility gate (pair vs parts)."""

import math

import pytest

from tasks.loops.rsi_anything.pair import (
    OPERATORS, Batch, Policy, WorldModel, bandit_update, clip_gain, code_features, fit_ridge, pair_gate, pick,
    reliability, should_adapt,
)


def test_bandit_moves_weight_to_the_operator_that_gained_and_keeps_a_floor():
    start = Policy.uniform()
    new = bandit_update(start, [("constant", 0.5), ("statement", -1.5)], lr=1.0, floor=0.05, scale=2.0)
    w = new.weights()
    # mean gain -0.5: constant (0.5 + 0.5) / 2 = +0.5, statement (-1.5 + 0.5) / 2 = -0.5 in log space
    raw = {op: math.exp({"constant": 0.5, "statement": -0.5}.get(op, 0.0)) for op in OPERATORS}
    total = sum(raw.values())
    assert w["constant"] == pytest.approx(raw["constant"] / total, abs=1e-6)
    assert w["statement"] == pytest.approx(raw["statement"] / total, abs=1e-6)
    assert w["compare"] == pytest.approx(1 / total, abs=1e-6)
    assert sum(w.values()) == pytest.approx(1.0, abs=1e-5)
    assert bandit_update(start, [], 1.0, 0.05, 1.0) == start
    assert bandit_update(start, [("constant", 0.0), ("compare", 0.0)], 1.0, 0.05, 1.0) == start  # no signal
    floored = bandit_update(start, [("constant", 1.0), ("operator", -1.0)], lr=50.0, floor=0.05, scale=1.0)
    assert min(floored.probs) >= 0.05 / (1 + 0.05 * 4) - 1e-6


def test_policy_and_wm_round_trip_through_their_code():
    p = Policy((0.1, 0.2, 0.3, 0.2, 0.2))
    assert Policy.from_code(p.code()) == p
    wm = WorldModel((1.0,) * 8, 0.5, 3, ("constant",))
    assert WorldModel.from_code(wm.code()) == wm
    fitted = fit_ridge([(1.0, 0, 0, 0, 0, 1, 0.1, 0), (0, 0, 1.0, 0, 0, 2, 0, 0.1)], [0.5, -0.5], 1.0)
    assert fitted.train_ops == ("constant", "compare")


def test_code_features_count_the_operator_edits_and_constant_shift():
    parent = "def f(x):\n    return x * 2.0\n"
    child = "def f(x):\n    return x * 4.0\n"
    x = code_features(parent, child, "constant", 1)
    assert x[:5] == (1.0, 0.0, 0.0, 0.0, 0.0)
    assert x[5] == 1.0
    assert x[6] == pytest.approx(math.log((4.0 + 1e-6) / (2.0 + 1e-6)))
    assert x[7] == 0.0
    grown = code_features(parent, "def f(x):\n    y = 1\n    return x * 2.0\n", "statement", 1)
    assert grown[6] == 1.0 and grown[7] > 0  # one more literal, more nodes


def test_ridge_recovers_a_linear_rule_and_the_zero_model_picks_the_first():
    xs = [(float(i), float(i % 2)) for i in range(8)]
    ys = [2.0 * a - 1.0 * b + 0.5 for a, b in xs]
    wm = fit_ridge(xs, ys, lam=1e-9)
    assert wm.coef == pytest.approx((2.0, -1.0), abs=1e-5) and wm.intercept == pytest.approx(0.5, abs=1e-5)
    assert pick(wm, [(0.0, 0.0), (3.0, 0.0), (1.0, 1.0)]) == 1
    assert pick(WorldModel.zero(), [(1.0,) * 8, (2.0,) * 8]) == 0
    assert clip_gain(-95.0, 5.0) == -5.0 and clip_gain(0.3, 5.0) == 0.3


def test_reliability_needs_pairs_and_coverage_before_calling_a_wm_reliable_or_not():
    pairs = [(0.0, 1.0), (0.0, -1.0), (0.5, 0.5)]
    few = reliability(pairs, {"constant"}, ["constant"], min_pairs=4, max_error=0.5, min_coverage=0.5)
    assert few.status == "insufficient_evidence" and few.calib_error == pytest.approx(2 / 3)
    low_cov = reliability(pairs * 2, {"constant"}, ["constant", "statement", "compare"], 4, 0.5, 0.5)
    assert low_cov.status == "insufficient_evidence" and low_cov.coverage == pytest.approx(1 / 3)
    bad = reliability(pairs * 2, {"constant"}, ["constant"], 4, 0.5, 0.5)
    assert bad.status == "unreliable" and should_adapt(bad, 6, 4) and not should_adapt(bad, 3, 4)
    good = reliability(pairs * 2, {"constant"}, ["constant"], 4, 0.7, 0.5)
    assert good.status == "reliable" and not should_adapt(good, 6, 4)


ONE = (1.0, 0.0)
TWO = (0.0, 1.0)
OLD_WM = WorldModel((1.0, 0.0), 0.0, 4)    # prefers feature 0
NEW_WM = WorldModel((0.0, 1.0), 0.0, 4)    # prefers feature 1


def test_parts_that_each_pass_can_fail_together_and_only_the_pair_gate_refuses_them():
    # old policy: feature-1 children gain more, so the new WM (prefers feature 1) is better on them
    old = [Batch((ONE, TWO), (0.0, 1.0)), Batch((ONE, TWO), (0.0, 1.0))]
    # new policy: higher mean gain, but there feature 0 is the winner: the new WM picks the loser
    new = [Batch((ONE, TWO), (3.0, 0.0)), Batch((ONE, TWO), (3.0, 0.0))]
    accept, pol, wm, ev = pair_gate(OLD_WM, NEW_WM, old, new, "pair")
    assert ev["policy_part"] and ev["wm_part"]
    assert ev["metric_old"] == 0.0 and ev["metric_new"] == 0.0 and ev["delta"] == 0.0
    assert (accept, pol, wm) == (False, False, False)
    accept, pol, wm, ev = pair_gate(OLD_WM, NEW_WM, old, new, "parts")
    assert (accept, pol, wm) == (True, True, True)


def test_the_pair_gate_accepts_an_assembly_that_beats_the_old_pair():
    old = [Batch((ONE, TWO), (0.0, 1.0)), Batch((ONE, TWO), (0.5, 2.0))]
    accept, pol, wm, ev = pair_gate(OLD_WM, NEW_WM, old, None, "pair")
    assert ev["wm_part"] and not ev["policy_part"]
    assert ev["per_draw"] == [1.0, 1.5] and ev["delta"] == 1.25
    assert (accept, pol, wm) == (True, False, True)
    assert ev["ci"][0] >= 1.0 and ev["ci"][1] <= 1.5
    none = pair_gate(OLD_WM, None, old, None, "parts")
    assert none[:3] == (False, False, False)


def test_a_child_that_does_not_parse_gets_the_largest_shift():
    assert code_features("def f():\n    return 1\n", '{"reason": "no edit",', "compare", 1) == \
        (0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 5.0, 0.0)
