"""Outputs are bounded data: nesting, size and element limits are enforced where a line is
parsed (in the sandbox and again in the parent), so no candidate output can fail a stage;
anything beyond the limits is an `invalid` execution with the reason."""

from __future__ import annotations

import json
import textwrap

import pytest

from suites.base import Case
from suites.executors.harness import MAX_OUTPUT_DEPTH, encode_output, output_violation
from suites.executors.transcript import Transcript, too_deep

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"


def nested(depth: int):
    value: list = [0.5]
    for _ in range(depth - 1):
        value = [value]
    return value


def test_the_limits_are_exact():
    assert output_violation(nested(MAX_OUTPUT_DEPTH)) is None
    assert "nested deeper than 64" in output_violation(nested(MAX_OUTPUT_DEPTH + 1))
    assert output_violation({"centers": [[0.1, 0.2]] * 26, "radii": [0.1] * 26}) is None
    assert "more than 10 values" in output_violation(list(range(10)), max_items=10)  # the list itself is one
    assert output_violation(list(range(9)), max_items=10) is None
    text, error = encode_output(nested(MAX_OUTPUT_DEPTH + 1), 10**6)
    assert text is None and "nested deeper" in error


def test_depth_scan_skips_brackets_inside_strings():
    assert not too_deep(json.dumps({"s": "[" * 500 + "{" * 500}).encode())
    assert not too_deep(json.dumps({"s": '\\"' + "[" * 500}).encode())
    assert too_deep(json.dumps(nested(MAX_OUTPUT_DEPTH + 3)).encode())
    assert not too_deep(json.dumps(nested(MAX_OUTPUT_DEPTH)).encode())


def _loaded(cases):
    transcript = Transcript(cases, 10**6)
    for event in ({"event": "ready"}, {"event": "loaded"}):
        assert transcript.feed(json.dumps(event).encode() + b"\n")
    return transcript


@pytest.mark.parametrize("depth", [975, 5000])
def test_a_forged_deep_result_line_makes_the_case_invalid_in_the_parent(depth):
    """The line a candidate writes itself (bypassing the sandbox-side check) is judged
    again in the parent: 975 deep parses but is refused; 5000 deep cannot be parsed at
    all and is still the next case's `invalid` result, not a killed sandbox."""
    cases = [Case("a", "train", {}), Case("b", "train", {})]
    transcript = _loaded(cases)
    line = '{"event": "result", "index": 0, "case_id": "a", "status": "ok", "output": ' + "[" * depth + "]" * depth + "}"
    assert transcript.feed(line.encode() + b"\n")
    [record] = transcript.records
    assert record.status == "invalid" and record.output is None and "nested deeper than 64" in record.error
    ok = {"event": "result", "index": 1, "case_id": "b", "status": "ok", "output": [1, 2]}
    assert transcript.feed(json.dumps(ok).encode() + b"\n")
    assert [r.status for r in transcript.records] == ["invalid", "ok"] and transcript.complete


@pytest.mark.parametrize("depth", [975, 5000])
def test_a_deeply_nested_output_is_an_invalid_execution(sandboxed, depth):
    source = textwrap.dedent("""
        import sys
        sys.setrecursionlimit(20000)

        def construct_packing(depth):
            value = [0.5]
            for _ in range(depth - 1):
                value = [value]
            return value

        def ok(depth):
            return [1.0, 2.0]
        """)
    results = sandboxed(timeout_s=5.0).run(source, RUNNER, "construct_packing",
                                          [Case("deep", "train", {"depth": depth}), Case("flat", "train", {"depth": 2})])
    assert [r.status for r in results] == ["invalid", "ok"]
    assert "nested deeper than 64" in results[0].error and results[0].output is None
    assert results[1].output == [[0.5]]
    json.dumps(results[1].output)  # what the execute stage stores
