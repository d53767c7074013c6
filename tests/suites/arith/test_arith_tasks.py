import random

import pytest

from suites.arith.tasks import (
    CATEGORIES,
    GENERATORS,
    generate,
    parse_problem,
    solve_add,
    solve_chain,
    solve_dsum,
    solve_rev,
    solve_sort,
    solve_sub,
    split_of,
    stream,
)


def test_hand_checked_solutions():
    assert solve_add(47, 85).target() == "7+5=12;4+8+1=13#132"
    assert solve_add(50, 325).target() == "0+5=5;5+2=7;3=3#375"
    assert solve_sub(305, 47).target() == "15-7=8;10-4-1=5;3-0-1=2#258"
    assert solve_dsum("4821").target() == "4+8=12;12+2=14;14+1=15#15"
    assert solve_rev("bdag").target() == "g,a,d,b#gadb"
    assert solve_sort("5183").target() == "1,3,5,8#1358"
    chain = solve_chain(12, (("+", 7), ("*", 3), ("-", 5)))
    assert (chain.prompt, chain.target()) == ("12+7;*3;-5", "12+7=19;19*3=57;57-5=52#52")
    assert chain.target("answer") == "52"


@pytest.mark.parametrize("category", CATEGORIES)
def test_generation_is_deterministic_and_distinct(category):
    first, again = generate(category, 50, seed=3), generate(category, 50, seed=3)
    assert first == again
    assert len({p.prompt for p in first}) == 50
    assert generate(category, 50, seed=4) != first


@pytest.mark.parametrize("category", CATEGORIES)
def test_answers_are_right_and_prompts_parse_back(category):
    for p in generate(category, 200, seed=0):
        assert parse_problem(p.prompt) == p
        assert p.target().endswith("#" + p.answer)
        if category in ("add", "sub"):
            assert int(p.answer) == eval(p.prompt)
        if category == "chain":
            assert 0 <= int(p.answer) <= 999


def test_parser_refuses_prompts_outside_the_domain():
    for text in ["4+85", "47+8500", "12-47", "rev abz", "dsum 12", "sort 12", "12+7", "60+7;*3", "12*9;+1", "", "47+85 "]:
        assert parse_problem(text) is None, text


def test_splits_depend_on_the_prompt_only_and_are_roughly_8_1_1():
    problems = generate("add", 3000, seed=0)
    counts = {s: sum(split_of(p.prompt) == s for p in problems) for s in ("train", "select", "holdout")}
    assert counts["train"] > 2200 and 200 < counts["select"] < 400 and 200 < counts["holdout"] < 400
    assert all(split_of(p.prompt) == "holdout" for p in generate("add", 20, seed=9, split="holdout"))


def test_stream_draws_train_prompts_only():
    draw = stream(CATEGORIES, seed=0)
    drawn = [draw() for _ in range(300)]
    assert all(split_of(p.prompt) == "train" for p in drawn)
    assert {p.category for p in drawn} == set(CATEGORIES)


def test_unknown_category_and_exhausted_space_are_clear_errors(monkeypatch):
    with pytest.raises(ValueError, match="unknown arith category"):
        generate("mul", 1, 0)
    monkeypatch.setitem(GENERATORS, "tiny", lambda rng: solve_add(10, rng.randint(10, 12)))
    assert len(generate("tiny", 3, 0)) == 3
    with pytest.raises(ValueError, match="only 3 distinct"):
        generate("tiny", 4, 0, patience=200)


def test_generators_use_only_the_given_rng():
    for gen in GENERATORS.values():
        assert gen(random.Random(5)) == gen(random.Random(5))
