"""The codemidas suite over the shipped (pinned) task set."""

from __future__ import annotations

from collections import Counter

import pytest

from schemas.configs import SandboxConfig
from suites.codemidas.suite import CodeMidas, kept_tasks, shipped_tasks
from suites.executors import make_executor
from suites.registry import get_suite

MY_BISECT = '''def bisect_right(a, x):
    """Written from the spec alone."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo
'''


def test_shipped_tasks_carry_their_source_pin_and_record():
    tasks = shipped_tasks()
    assert len({t["task_id"] for t in tasks}) == len(tasks)
    for task in tasks:
        assert len(task["module_sha256"]) == 64
        assert task["record"]["stage_reached"] in ("probe", "derive", "gate1", "kept")
    for task in kept_tasks():
        record = task["record"]
        assert record["ref_passes"] and record["hollow_fails"] and record["trivial_killed"]
        assert record["drop_reason"] is None and 0 < record["mutation_score"] <= 1


def test_cases_split_by_test_index_and_the_seed_is_the_stub():
    suite = get_suite("codemidas", task="bisect::bisect_right")
    counts = Counter(case.split for case in suite.cases())
    assert counts == {"train": 12, "select": 6, "holdout": 6}
    assert suite.entrypoint == "bisect_right"
    assert "raise NotImplementedError()" in suite.seed_program()
    with pytest.raises(ValueError, match="has no kept task 'bisect::nope'"):
        CodeMidas(task="bisect::nope")


def test_score_compares_outcomes_with_the_originals():
    suite = CodeMidas()
    case = suite.cases()[0]
    expect = suite.task["tests"][0]["expect"]
    kind, text = expect.split(":", 1)
    assert suite.score(case, {kind: text}).metrics == {"pass": 1.0}
    assert suite.score(case, {"raises": "NotImplementedError"}).metrics == {"pass": 0.0}
    wrong = suite.score(case, {"returns": 7})
    assert not wrong.valid and wrong.metrics == {"pass": 0.0}


def test_in_the_sandbox_a_correct_body_passes_and_the_stub_fails():
    suite = CodeMidas()
    executor = make_executor(SandboxConfig(timeout_s=2.0))
    cases = suite.cases()

    def pass_rate(program: str) -> float:
        results = executor.run(program, suite.runner_source(), suite.entrypoint, cases)
        return sum(suite.score(c, r.output).metrics["pass"] for c, r in zip(cases, results)) / len(cases)

    assert pass_rate(MY_BISECT) == 1.0
    assert pass_rate(suite.seed_program()) == 0.0


def test_a_rebuild_reproduces_the_shipped_task_where_the_source_is_the_pinned_one():
    import calendar
    import inspect

    from suites.codemidas.build import build_modules
    from suites.codemidas.hollow import sha256_text

    shipped = next(t for t in shipped_tasks() if t["task_id"] == "calendar::leapdays")
    if sha256_text(inspect.getsource(calendar)) != shipped["module_sha256"]:
        pytest.skip("this interpreter's calendar.py is not the source the shipped task was cut from")
    (rebuilt,) = build_modules(make_executor(SandboxConfig(timeout_s=2.0)), ["calendar"], 0, 24, ["calendar::leapdays"])
    assert rebuilt.to_json() == shipped
