"""OpenEvolve's problem format runs unchanged: the problem's evaluator scores the
candidate in the real sandbox, every numeric metric it returns is kept, the cascade's
first stage is the train case, a candidate that edits outside its EVOLVE-BLOCK is
refused, and a folder that is not a problem gets one line saying what is missing."""

import math

import pytest

from suites.executors.subprocess import SubprocessExecutor
from suites.openevolve import EXAMPLE, OpenEvolve, outside_block
from suites.registry import get_suite

PROGRAM = """import math

# EVOLVE-BLOCK-START
def guess():
    return 2.0
# EVOLVE-BLOCK-END


def helper():
    return guess()
"""
EVALUATOR = """import importlib.util


class Result:
    def __init__(self, metrics):
        self.metrics = metrics


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("p", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    value = module.helper()
    return Result({"closeness": 1.0 / (1.0 + abs(value - 3.0)), "value": value, "label": "not a number"})
"""


def problem(tmp_path, program=PROGRAM, evaluator=EVALUATOR):
    (tmp_path / "initial_program.py").write_text(program)
    (tmp_path / "evaluator.py").write_text(evaluator)
    return OpenEvolve(str(tmp_path))


def run(suite, program):
    cases = suite.cases()
    results = SubprocessExecutor().run(program, suite.runner_source(), suite.entrypoint, cases)
    return [(r.status, suite.score(c, r.output if r.status == "ok" else None)) for c, r in zip(cases, results)]


def test_the_evaluator_scores_the_candidate_in_the_sandbox_and_every_number_is_kept(tmp_path):
    suite = problem(tmp_path)
    assert [(c.case_id, c.split) for c in suite.cases()] == [("evaluate", "select")]  # no stage1, no holdout
    [(status, verdict)] = run(suite, PROGRAM)
    assert status == "ok" and verdict.valid
    # no combined_score: the mean of the numeric metrics (0.5 and 2.0); the string is dropped
    assert verdict.metrics == {"closeness": 0.5, "value": 2.0, "combined_score": 1.25}
    better = PROGRAM.replace("return 2.0", "return 3.0")
    [(_, verdict)] = run(suite, better)
    assert verdict.metrics["closeness"] == 1.0


def test_a_candidate_that_edits_outside_its_block_is_refused(tmp_path):
    suite = problem(tmp_path)
    outside = PROGRAM.replace("    return guess()", "    return 3.0")
    assert outside_block(outside) != outside_block(PROGRAM)
    [(status, verdict)] = run(suite, outside)
    assert status == "ok" and not verdict.valid and "outside its EVOLVE-BLOCK" in verdict.reason
    crashing = PROGRAM.replace("return 2.0", "return 1 / 0")
    [(status, verdict)] = run(suite, crashing)
    assert status == "error" and not verdict.valid and verdict.metrics == {"combined_score": 0.0}


def test_the_example_problem_has_a_cascade_and_the_seed_scores_its_fit():
    suite = get_suite("openevolve")
    assert suite.path == str(EXAMPLE)
    assert [(c.case_id, c.split) for c in suite.cases()] == [("stage1", "train"), ("evaluate", "select")]
    (_, stage1), (_, full) = run(suite, suite.seed_program())
    for verdict, points in ((stage1, [0.0, 1.0, 2.0, 3.0]), (full, [i * 0.05 for i in range(61)])):
        mse = sum((0.5 * x - math.sin(x) - 0.1 * x * x) ** 2 for x in points) / len(points)
        assert verdict.valid and verdict.metrics["mse"] == pytest.approx(mse)
        assert verdict.metrics["combined_score"] == pytest.approx(1 / (1 + mse))


def test_a_folder_that_is_not_a_problem_is_named_in_one_line(tmp_path):
    with pytest.raises(ValueError, match="needs initial_program.py and evaluator.py"):
        OpenEvolve(str(tmp_path))
    with pytest.raises(ValueError, match="no # EVOLVE-BLOCK-START"):
        problem(tmp_path, program="def f():\n    return 1\n")
    with pytest.raises(ValueError, match="defines no evaluate"):
        problem(tmp_path, evaluator="def score(path):\n    return {}\n")
