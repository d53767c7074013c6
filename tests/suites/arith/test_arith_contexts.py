import re
from dataclasses import replace

import pytest

from suites.arith.contexts import LEVELS, SECRET_LEVELS, audit, contexts, leaked_levels, leaks
from suites.arith.tasks import CATEGORIES, REV_LETTERS, generate, solve_add, solve_sub


def test_levels_by_hand_for_an_addition():
    assert contexts(solve_add(47, 85)) == {
        "solution": "7+5=12;4+8+1=13#132",
        "method": "columns from right, carry yes",
        "angle": "three digits, even",
        "category": "addition",
        "answer": "132",
    }
    assert contexts(solve_sub(305, 47))["method"] == "columns from right, borrow yes,yes"
    assert tuple(contexts(solve_add(47, 85))) == LEVELS


def test_leak_is_a_whole_token_match():
    assert leaks("so 132.", "132")
    assert leaks("132", "132")
    assert not leaks("1320", "132")
    assert not leaks("x132", "132")
    assert leaks("a gad b", "gad")
    assert not leaks("gadb", "gad")


def test_audit_catches_an_answer_planted_in_the_method():
    problem = solve_add(47, 85)
    compiled = contexts(problem) | {"method": "columns from right, carry yes, result 132"}
    assert leaked_levels(problem, compiled) == ["method"]
    assert audit(problem, compiled)["answer"] and audit(problem, compiled)["solution"]


@pytest.mark.parametrize("category", CATEGORIES)
def test_real_secret_levels_never_leak(category):
    for problem in generate(category, 400, seed=1):
        assert leaked_levels(problem, contexts(problem)) == [], problem


@pytest.mark.parametrize("category", CATEGORIES)
def test_secret_levels_hold_no_digit_and_no_word_made_of_rev_letters(category):
    """Why no leak is possible: answers are digits or words over a-h."""
    for problem in generate(category, 100, seed=2):
        for level in SECRET_LEVELS:
            text = contexts(problem)[level]
            assert not re.search(r"\d", text)
            assert all(set(word) - set(REV_LETTERS) for word in re.findall(r"[a-z]+", text)), text


def test_a_leaky_answer_would_be_caught_even_for_a_short_answer():
    problem = replace(solve_add(47, 85), answer="right")
    assert leaked_levels(problem, contexts(solve_add(47, 85))) == ["method"]
