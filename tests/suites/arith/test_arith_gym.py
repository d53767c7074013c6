import importlib.util

import pytest

from suites.arith import Arith
from suites.arith.contexts import contexts, leaked_levels
from suites.arith.gym import fold_terms, gym_problems
from suites.arith.tokenizer import Tokenizer

HAS_GYM = importlib.util.find_spec("reasoning_gym") is not None


def test_left_fold_by_hand():
    problem = fold_terms("98+93-77", "rg_chain_sum")
    assert problem.target() == "98+93=191;191-77=114#114"
    assert fold_terms("4-1-7", "rg_chain_sum").target() == "4-1=3;3-7=-4#-4"


def test_unadapted_task_is_refused():
    with pytest.raises(ValueError, match="not adapted"):
        gym_problems("rubiks_cube", 1, 0)


@pytest.mark.skipif(HAS_GYM, reason="reasoning-gym is installed")
def test_missing_gym_names_the_package():
    with pytest.raises(ImportError, match="reasoning-gym==0.1.25"):
        gym_problems("chain_sum", 1, 0)


@pytest.mark.skipif(not HAS_GYM, reason="reasoning-gym is an optional dependency")
def test_gym_chain_sum_is_deterministic_tokenizable_and_leak_free():
    problems = gym_problems("chain_sum", 200, seed=0)
    assert problems == gym_problems("chain_sum", 200, seed=0)
    tok = Tokenizer()
    for p in problems:
        tok.encode(p.prompt + p.target())
        assert leaked_levels(p, contexts(p)) == []
        assert len(p.prompt) <= 8


@pytest.mark.skipif(not HAS_GYM, reason="reasoning-gym is an optional dependency")
def test_suite_with_gym_tasks_has_one_case_per_prompt():
    cases = Arith(categories=("add",), n_per_category=300, gym_tasks=("chain_sum",)).cases()
    assert len({c.case_id for c in cases}) == len(cases)
    assert {c.payload["category"] for c in cases} == {"add", "rg_chain_sum"}
