"""cover's pure logic on hand-built cases: the policy's REINFORCE step, the test rewards,
the diversity filter and the anti-collapse verdict."""

import math
import random

import numpy as np
import pytest

from suites.codemidas import fuzz
from tasks.loops.cover import discriminate as d
from tasks.loops.cover.policy import advantages, probabilities, reinforce
from tasks.loops.cover.problems import OPERATORS, Problem, operator_of
from tasks.loops.cover.rounds import Arm, judge_tests


def test_reinforce_moves_mass_to_the_better_action_by_the_hand_computed_step():
    logits = np.zeros(2)
    # rewards [1, 0]: advantages [+1, -1]; probs [.5, .5]; grad = (+1)([1,0]-p) + (-1)([0,1]-p) = [1, -1]
    after = reinforce(logits, [0, 1], [1.0, 0.0], lr=0.5)
    assert after == pytest.approx([0.25, -0.25])
    assert list(advantages([2.0, 2.0, 2.0])) == [0.0, 0.0, 0.0]
    assert probabilities(after)[0] > 0.5


def test_mi_is_one_bit_for_a_perfect_separator_and_the_cov_gate_zeroes_a_reversed_one():
    gt = [1.0, 1.0, 0.5, 0.5]
    assert d.mutual_information([1, 1, 0, 0], gt) == pytest.approx(1.0)
    assert d.test_reward([1, 1, 0, 0], gt, "mi_cov") == (pytest.approx(1.0), pytest.approx(1.0), 1)
    reward, mi, sign = d.test_reward([0, 0, 1, 1], gt, "mi_cov")  # worse programs pass: same MI, no reward
    assert (reward, sign) == (0.0, -1) and mi == pytest.approx(1.0)
    assert d.test_reward([1, 1, 1, 1], gt, "mi_cov") == (0.0, 0.0, 0)
    assert d.test_reward([1, 1, 1, 1], gt, "pass_rate")[0] == 1.0  # going easy pays under pass rate


def test_filter_drops_invalid_duplicate_input_and_same_behaviour_with_reasons():
    reasons = d.diversity_filter([True, False, True, True, True], ["a", "b", "a", "c", "d"],
                                 [[1, 0], [0, 0], [1, 0], [1, 0], [0, 1]])
    assert reasons == [None, "invalid: no program produced an outcome", "duplicate input",
                       "same behaviour as test 0", None]


def test_plurality_auc_and_rerank():
    assert d.plurality(["b", "a", "b", None]) == "b"
    assert d.plurality(["b", "a"]) == "a" and d.plurality([None]) is None
    assert d.auc([1.0, 0.5, 0.5], [True, False, True]) == pytest.approx(0.75)
    assert math.isnan(d.auc([1.0], [True]))
    assert d.rerank_accuracy([1.0, 1.0, 0.2], [True, False, True]) == 0.5


def test_a_suite_that_passes_everything_is_rejected_with_its_reason():
    reason, evidence = d.suite_verdict([[1, 1, 1], [1, 1, 1], [1, 0, 1]], original=0, max_trivial=0.5)
    assert reason == "2/3 tests pass every program (over 50%): collapsed to trivial"
    assert evidence["trivial"] == 2 and evidence["programs_killed"] == 1
    assert d.suite_verdict([[1, 0, 1]], 0, 0.5)[0] is None
    assert d.suite_verdict([[1, 1, 1]], 0, 1.0)[0] == "the suite kills no mutant"
    assert d.suite_verdict([], 0, 0.5)[0] == "no test survived the filter"


def test_judge_tests_votes_the_expected_outcome_and_rewards_only_kept_tests():
    # programs: the original (GT 1.0) and a mutant (GT 0.0) on two GT tests; one pool input each generator
    p = Problem("t::f", "f", ["orig", "mut"], ["original", "return_none"],
                [{"args": [0], "expect": "returns:int:0", "split": "train"}] * 2,
                {g: [[i]] for i, g in enumerate(fuzz.PROFILES)})
    p.outcomes = {p.ids[0]: ["returns:int:0"] * 2 + ["returns:int:1", "returns:int:2", "returns:int:3", None],
                  p.ids[1]: ["returns:NoneType:None"] * 2 + ["returns:int:1", "returns:NoneType:None",
                                                             "returns:NoneType:None", None]}
    programs = [0, 0, 1]  # the original twice: it wins every vote it disagrees in
    rows = judge_tests(p, programs, [(0, 0), (1, 0), (1, 0), (3, 0)], Arm("mi_cov", True))
    assert [r["passed"] for r in rows[:3]] == [[1, 1, 1], [1, 1, 0], [1, 1, 0]]
    assert [r["drop_reason"] for r in rows] == [None, None, "duplicate input", "invalid: no program produced an outcome"]
    assert rows[0]["trivial"] and rows[0]["reward"] == 0.0
    assert rows[1]["reward"] == pytest.approx(d.mutual_information([1, 1, 0], [1.0, 1.0, 0.0])) and rows[1]["cov_sign"] == 1
    assert rows[2]["reward"] == 0.0 and rows[3]["reward"] == 0.0
    unfiltered = judge_tests(p, programs, [(1, 0), (1, 0)], Arm("pass_rate", False))
    assert [r["reward"] for r in unfiltered] == [pytest.approx(2 / 3)] * 2


def test_operators_cover_the_suites_mutant_names_and_profiles_are_seeded():
    assert operator_of("flip_compare_10") == "flip_compare" and operator_of("return_none") == "return_none"
    assert set(OPERATORS) == {"original", "return_none", "return_first_arg", "flip_compare", "swap_binop",
                              "shift_const"}
    a = [fuzz.profiled_value("list[int]", random.Random("s"), "edge") for _ in range(3)]
    assert a == [fuzz.profiled_value("list[int]", random.Random("s"), "edge") for _ in range(3)]
    assert all(len(x) <= 1 for x in a)
    rng = random.Random(1)
    assert fuzz.profiled_value("int", random.Random(1), "fuzz") == fuzz.value("int", rng)
