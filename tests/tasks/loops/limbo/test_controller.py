"""LIMBO's controller: two ridge heads per arm, the exploration bonus, the criterion and
the update of the chosen arm only, on hand-computed values."""

import math

import pytest

from tasks.loops.limbo.controller import DIM, TEMPLATE_ORDER, Controller, features

E0 = [1.0] + [0.0] * (DIM - 1)


def test_features_read_only_what_is_known_before_the_request():
    x = features("open_ticket", {"email": "ab"}, [(True, 1.0), (False, 3.0)], True, 0.25)
    assert len(x) == DIM and x[0] == 1.0 and x[1 + TEMPLATE_ORDER.index("open_ticket")] == 1.0
    assert sum(x[1:1 + len(TEMPLATE_ORDER)]) == 1.0
    assert x[-5:] == [len('{"email": "ab"}') / 100, 0.5, 2.0, 1.0, 0.25]
    assert features("open_ticket", {}, [], False, 0.0)[-4:] == [0.5, 0.0, 0.0, 0.0]


def test_a_fresh_arm_predicts_zero_with_the_full_bonus():
    c = Controller(("a", "b"), alpha=0.5, cost_weight=1.0, ridge=1.0)
    choice = c.predict("a", E0)
    assert (choice.p_pred, choice.cost_pred, choice.bonus) == (0.0, 0.0, 0.5)


def test_one_update_gives_the_ridge_estimates_by_hand():
    c = Controller(("a", "b"), alpha=0.5, cost_weight=0.25, ridge=1.0)
    c.update("a", E0, True, 2.0)
    # A = I + e0 e0' -> (A^-1)_00 = 1/2: p = 1/2, cost = 1, bonus = 0.5 * sqrt(1/2)
    choice = c.predict("a", E0)
    assert choice.p_pred == pytest.approx(0.5) and choice.cost_pred == pytest.approx(1.0)
    assert choice.bonus == pytest.approx(0.5 * math.sqrt(0.5))
    assert choice.score == pytest.approx(0.5 + 0.5 * math.sqrt(0.5) - 0.25)
    assert c.heads["b"].pulls == 0 and c.heads["a"].pulls == 1  # only the chosen arm


def test_the_criterion_trades_success_against_cost():
    c = Controller(("cheap", "dear"), alpha=0.0, cost_weight=0.25, ridge=1.0)
    for _ in range(9):
        c.update("cheap", E0, True, 0.4)
        c.update("dear", E0, True, 2.0)
    assert c.choose(E0).arm == "cheap"  # same success, lower cost
    for _ in range(9):
        c.update("cheap", E0, False, 0.4)
    # cheap: p = 9/19, c = 7.2/19; dear: p = 9/10, c = 1.8: 0.379 - 0.095 < 0.9 - 0.45
    assert c.choose(E0).arm == "dear"


def test_ties_go_to_the_first_arm():
    assert Controller(("x", "y"), alpha=1.0, cost_weight=1.0, ridge=1.0).choose(E0).arm == "x"
