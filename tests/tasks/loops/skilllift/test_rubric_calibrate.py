"""SkillLift's rubric checks, rank agreement and weight refits on hand-built rule sets."""

import json
import math

import numpy as np
import pytest

from tasks.gate.stats import kendall, rank_corr_ci
from tasks.loops.skilllift.calibrate import agreement, pairwise_weights, refit, regression_weights
from tasks.loops.skilllift.rubric import covers_item, extend_rubric, failed_events, item_score, rubric_score, seed_rubric
from tasks.proposers.rule_evidence import Trace

RETRY = {"id": "r", "trigger": {"on_error": "transient_unavailable", "tool": "*"}, "action": {"retry": {"max": 2}}}
PAGE = {"id": "p", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 10}}}


def step(name, ok, error=None, result=None):
    body = {"error": {"code": error}} if error else {"result": result or {}}
    return {"kind": "tool_call", "name": name, "ok": ok, "args_json": "{}", "result_json": json.dumps(body)}


def test_covers_matches_a_wildcard_rule_and_the_action_kind():
    item = covers_item("on_error", "get_order", "transient_unavailable", 1.0)
    assert item_score(item, {"rules": [RETRY]}) == 1.0
    assert item_score(item, {"rules": [{**RETRY, "trigger": {"on_error": "not_found", "tool": "*"}}]}) == 0.0
    paginate = covers_item("before", "list_orders", None, 1.0)
    assert item_score(paginate, {"rules": [PAGE]}) == 1.0
    assert item_score(paginate, {"rules": [{**PAGE, "action": {"call_first": {"tool": "get_user"}}}]}) == 0.0


def test_generic_items_score_depth_breadth_and_size():
    deep = {**RETRY, "action": {"retry": {"max": 6}}}
    assert item_score({"kind": "retry_depth", "target": 3}, {"rules": [RETRY, deep]}) == pytest.approx((2 / 3 + 1) / 2)
    assert item_score({"kind": "breadth"}, {"rules": [RETRY, PAGE]}) == pytest.approx(1 / 6)
    assert item_score({"kind": "concise", "limit": 1}, {"rules": [RETRY, PAGE]}) == 0.5
    assert item_score({"kind": "retry_depth", "target": 3}, {"rules": []}) == 0.0


def test_rubric_score_normalises_by_absolute_weights():
    rubric = [{**covers_item("on_error", "x", "transient_unavailable", 2.0)},
              {"id": "c", "kind": "concise", "limit": 0, "weight": -1.0}]
    # covers 1 * 2, concise with one rule over limit 0: 0/1 = 0 -> (2 - 0) / 3
    assert rubric_score(rubric, {"rules": [RETRY]}) == pytest.approx(2 / 3)
    assert rubric_score([], {"rules": []}) == 0.0


def test_the_seed_rubric_has_one_item_per_failed_event_weighted_by_share():
    failed = [Trace("a/0", "a", (step("get_order", False, "transient_unavailable"),), False),
              Trace("a/1", "a", (step("get_order", False, "transient_unavailable"),), False),
              Trace("b/0", "b", (step("list_orders", True, result={"next_page": 2}),), False),
              Trace("b/1", "b", (step("list_orders", True),), True)]
    assert failed_events(failed) == {("on_error", "get_order", "transient_unavailable"): 2,
                                     ("before", "list_orders", None): 1}
    rubric = seed_rubric(failed)
    assert [(i["id"], i["weight"]) for i in rubric[:2]] == [
        ("covers:on_error:get_order:transient_unavailable", round(2 / 3, 6)), ("covers:before:list_orders:paginate", round(1 / 3, 6))]
    assert [i["kind"] for i in rubric[2:]] == ["retry_depth", "breadth", "concise"]
    assert extend_rubric(rubric, failed) == rubric  # nothing new to add


def test_kendall_tau_b_by_hand_and_its_ci():
    assert kendall([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    assert kendall([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # pairs: (1,2)+ (1,3)+ (2,3)- ; no ties -> (2 - 1) / 3
    assert kendall([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    # a tie in y: concordant 2, discordant 0, untied x 3, untied y 2 -> 2 / sqrt(6)
    assert kendall([1, 2, 3], [1, 2, 2]) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall([1, 1], [1, 2]))
    low, high = rank_corr_ci([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert (low, high) == (1.0, 1.0)
    assert agreement([0.1, 0.2, 0.3], [3, 2, 1]).kendall == -1.0


def test_pairwise_refit_learns_the_item_that_orders_the_real_scores():
    # item 0 orders the real scores, item 1 is anti-ordered; the prior favours item 1
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    real = np.array([0.9, 0.1, 0.5])
    w = pairwise_weights(x, real, prior=np.array([0.0, 1.0]), l2=0.01)
    assert w[0] > 0 > w[1]
    assert kendall(real, x @ w) == 1.0
    assert np.array_equal(pairwise_weights(x, np.ones(3), np.array([0.3, 0.7]), 0.01), [0.3, 0.7])


def test_regression_refit_with_a_tiny_pull_is_least_squares():
    x = np.array([[0.0], [1.0], [2.0]])
    real = np.array([1.0, 3.0, 5.0])  # slope 2
    assert regression_weights(x, real, np.array([0.0]), l2=1e-9)[0] == pytest.approx(2.0)


def test_refit_keeps_items_and_changes_only_weights_and_off_keeps_all():
    rubric = [{"id": "a", "kind": "breadth", "weight": 0.5}, {"id": "b", "kind": "concise", "limit": 1, "weight": 0.5}]
    same = refit(rubric, [[1, 0], [0, 1]], [1.0, 0.0], "off", 0.1)
    assert same == rubric
    fit = refit(rubric, [[1, 0], [0, 1]], [1.0, 0.0], "pairwise", 0.1)
    assert [i["id"] for i in fit] == ["a", "b"] and fit[0]["weight"] > fit[1]["weight"]
    with pytest.raises(ValueError, match="skilllift.calibrate"):
        refit(rubric, [[1, 0], [0, 1]], [1.0, 0.0], "mse", 0.1)
