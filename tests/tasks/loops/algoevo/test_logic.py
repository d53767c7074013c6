"""AlgoEvo's pure logic on hand-built data: node statistics along the lineage, UCB node
choice, experience cards, the mean-Δ pattern rule with its 2-distinct-task threshold, and
the skill's operator-family prior."""

import math

import pytest

from tasks.loops.algoevo.logic import (
    FAMILIES,
    Card,
    add_child,
    best_so_far,
    evals_to_reach,
    family_weights,
    patterns,
    root_node,
    skill_document,
    task_effects,
    ucb_pick,
    ucb_values,
)


def tree_abc():
    """root r (1.0) -> a (2.0) -> b (0.5); r -> c (failed, floor -100)."""
    t = {"r": root_node("r", 1.0, True)}
    t = add_child(t, "a", "r", 2.0, True)
    t = add_child(t, "b", "a", 0.5, True)
    return add_child(t, "c", "r", -100.0, False)


def test_node_stats_backpropagate_visits_and_best_along_the_lineage():
    t = tree_abc()
    assert (t["r"].visits, t["a"].visits, t["b"].visits, t["c"].visits) == (4, 2, 1, 1)
    assert (t["r"].best, t["a"].best, t["b"].best) == (2.0, 2.0, 0.5)
    assert t["c"].best == float("-inf")  # a failed child never raises a best
    assert (t["b"].depth, t["c"].depth, t["c"].order) == (2, 1, 3)


def test_ucb_values_by_hand_and_failed_nodes_are_not_expandable():
    t = tree_abc()
    values = ucb_values(t, 1.0)
    assert set(values) == {"r", "a", "b"}
    # valid bests: r 2.0, a 2.0, b 0.5 -> normalised 1, 1, 0; N = 4 evaluations
    assert values["r"] == pytest.approx(1.0 + math.sqrt(math.log(4) / 4))
    assert values["a"] == pytest.approx(1.0 + math.sqrt(math.log(4) / 2))
    assert values["b"] == pytest.approx(0.0 + math.sqrt(math.log(4) / 1))
    # c=1: a (1 + 0.833) beats b (1.177) and r (1.589)
    assert ucb_pick(t, 1.0) == "a"
    # c=0: pure exploitation; r and a tie at 1.0, the earlier node wins
    assert ucb_pick(t, 0.0) == "r"
    # a large c favours the least visited valid node
    assert ucb_pick(t, 10.0) == "b"


def test_a_tree_whose_root_failed_cannot_be_expanded():
    with pytest.raises(ValueError, match="no valid node"):
        ucb_pick({"r": root_node("r", -100.0, False)}, 1.0)


def card(task, family, before, after, valid=True, i=0):
    return Card(task_id=task, eval_idx=i, node=f"n{i}", parent="p", family=family, params=f"{family}: edit",
                before=before, after=after, valid=valid, parent_depth=0, parent_visits=1, ucb=1.0,
                prior_weight=1.0, skill_ver="s0")


def test_card_delta_conditions_and_rationale():
    c = card("bin_packing", "constant", -5.0, -4.5)
    assert c.delta == pytest.approx(0.5)
    assert card("lasso", "constant", -0.8, -100.0, valid=False).delta is None
    assert c.conditions() == {"parent_depth": 0, "parent_visits": 1, "ucb": 1.0, "prior_weight": 1.0,
                              "valid": True, "skill_ver": "s0"}
    assert "constant" in c.rationale() and "prior weight 1" in c.rationale()


def test_a_family_positive_on_one_task_is_not_promoted_on_two_it_is():
    cards = [
        # constant: +0.2, +0.4 on A (mean +0.3); +0.1, +0.1 on B (+0.1) -> 2 tasks -> promoted
        card("A", "constant", 0, 0.2), card("A", "constant", 0, 0.4),
        card("B", "constant", 0, 0.1), card("B", "constant", 0, 0.1),
        # compare: +0.5, +0.1 on A (+0.3); -0.3, +0.1 on B (-0.1) -> 1 task -> not promoted
        card("A", "compare", 0, 0.5), card("A", "compare", 0, 0.1),
        card("B", "compare", 0, -0.3), card("B", "compare", 0, 0.1),
        # operator: +1.0 on A only -> 1 task
        card("A", "operator", 0, 1.0), card("A", "operator", 0, 1.0),
    ]
    got = {p.family: p for p in patterns(cards, min_tasks=2, min_cards=2, centred=False)}
    assert got["constant"].promoted and got["constant"].support == ("A", "B")
    assert got["constant"].effects == pytest.approx({"A": 0.3, "B": 0.1})
    assert not got["compare"].promoted and got["compare"].support == ("A",)  # negative mean on B
    assert got["compare"].effects["B"] == pytest.approx(-0.1)
    assert not got["operator"].promoted and got["operator"].support == ("A",)
    # the threshold is a parameter: with 1 task, every family positive somewhere is promoted
    assert all(p.promoted for p in patterns(cards, min_tasks=1, min_cards=2, centred=False))


def test_failed_children_carry_no_delta_and_few_cards_give_no_evidence():
    cards = [card("A", "statement", 0, 0.2), card("A", "statement", 0, -100, valid=False),
             card("B", "statement", 0, 0.2)]  # B has one valid card: below min_cards=2
    assert task_effects(cards, centred=False, min_cards=1) == {"statement": {"A": pytest.approx(0.2),
                                                                             "B": pytest.approx(0.2)}}
    assert task_effects(cards, centred=False, min_cards=2) == {}
    assert patterns(cards, min_tasks=2, min_cards=2) == []


def test_centred_effects_subtract_the_task_mean():
    # task A: constant -0.1, -0.1; compare -0.5, -0.5 -> task mean -0.3; constant +0.2, compare -0.2
    # task B: constant 0.0, 0.0; compare -0.4, -0.4 -> mean -0.2; constant +0.2, compare -0.2
    cards = [card("A", "constant", 0, -0.1), card("A", "constant", 0, -0.1),
             card("A", "compare", 0, -0.5), card("A", "compare", 0, -0.5),
             card("B", "constant", 0, 0.0), card("B", "constant", 0, 0.0),
             card("B", "compare", 0, -0.4), card("B", "compare", 0, -0.4)]
    raw = {p.family: p.promoted for p in patterns(cards, centred=False)}
    centred = {p.family: p for p in patterns(cards, centred=True)}
    assert raw == {"compare": False, "constant": False}  # every raw mean is <= 0
    assert centred["constant"].promoted and centred["constant"].effects == pytest.approx({"A": 0.2, "B": 0.2})
    assert not centred["compare"].promoted


def test_skill_prior_boosts_promoted_families_only():
    w = family_weights(["constant"], 3.0)
    assert w == {f: (3.0 if f == "constant" else 1.0) for f in FAMILIES}
    doc = skill_document(["lasso", "circle_packing"], ["constant"], 3.0, previous="abc")
    assert doc["family_weights"] == w and doc["tasks_seen"] == ["circle_packing", "lasso"]
    assert doc["promoted_patterns"] == ["constant"] and doc["previous"] == "abc"
    assert "crossover" not in doc["operator_families"]


def test_evaluations_to_reach_a_target():
    curve = best_so_far([1.0, None, 0.5, 1.5, 2.0])
    assert curve == [1.0, 1.0, 1.0, 1.5, 2.0]
    assert evals_to_reach(curve, 1.0) == 0
    assert evals_to_reach(curve, 1.2) == 3
    assert evals_to_reach(curve, 3.0) is None
