"""The in-process executor (trusted code only) gives the sandbox's statuses and outputs
for the same well-behaved and failing programs, without isolation."""

from __future__ import annotations

import sys

from suites.base import Case
from suites.executors import InProcessExecutor

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"


def cases(*payloads: dict) -> list[Case]:
    return [Case(f"case-{index}", "train", payload) for index, payload in enumerate(payloads)]


def test_runs_every_case_in_order():
    source = "def solve(x):\n    return {'double': 2 * x, 'pair': (x, 's')}\n"
    results = InProcessExecutor().run(source, RUNNER, "solve", cases({"x": 1}, {"x": 2}, {"x": 3}))
    assert [r.case_id for r in results] == ["case-0", "case-1", "case-2"]
    assert [r.status for r in results] == ["ok"] * 3
    assert [r.output for r in results] == [{"double": 2 * x, "pair": [x, "s"]} for x in (1, 2, 3)]  # JSON round trip
    assert all(r.extra == {"executor": "inprocess", "isolation": "none"} for r in results)


def test_exception_is_an_error_with_its_text_and_place():
    source = "def solve(x):\n    return 1 / x\n"
    results = InProcessExecutor().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 4}))
    assert results[0].status == "error"
    assert "ZeroDivisionError: division by zero" in results[0].error
    assert "candidate_" in results[0].error and ":2 in solve" in results[0].error
    assert (results[1].status, results[1].output) == ("ok", 0.25)


def test_memory_error_and_invalid_outputs_have_the_sandbox_statuses():
    source = (
        "def solve(kind):\n"
        "    if kind == 'memory':\n"
        "        raise MemoryError\n"
        "    return object() if kind == 'object' else 'x' * 5000\n"
    )
    payloads = cases({"kind": "memory"}, {"kind": "object"}, {"kind": "big"})
    results = InProcessExecutor(max_output_bytes=2048).run(source, RUNNER, "solve", payloads)
    assert [r.status for r in results] == ["memory", "invalid", "invalid"]
    assert "not JSON-serialisable" in results[1].error and "max_output_bytes=2048" in results[2].error


def test_a_program_that_fails_to_load_fails_every_case_and_leaves_no_module():
    modules_before = set(sys.modules)
    results = InProcessExecutor().run("def solve(:\n", RUNNER, "solve", cases({}, {}))
    assert [r.status for r in results] == ["error", "error"]
    assert all("SyntaxError" in r.error for r in results)
    missing = InProcessExecutor().run("def other():\n    return 1\n", RUNNER, "solve", cases({}))
    assert "defines no function 'solve'" in missing[0].error
    assert set(sys.modules) == modules_before
