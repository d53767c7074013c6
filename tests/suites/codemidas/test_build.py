"""Building a task in the real subprocess sandbox from a hand-built function."""

from __future__ import annotations

import pytest

from schemas.configs import SandboxConfig
from suites.codemidas.build import build_function, pass_fraction
from suites.codemidas.hollow import task_functions
from suites.executors import make_executor

CLAMP = '''def clamp_sum(xs, limit):
    """Sum of xs, capped at limit."""
    total = 0
    for x in xs:
        total += x
    if total > limit:
        return limit
    return total
'''

CLOCK = '''def jitter(n):
    """Depends on the process: never reliably graded."""
    import time
    return n + time.perf_counter_ns() % 1000
'''


def test_pass_fraction_counts_equal_outcomes_and_failed_runs_fail():
    assert pass_fraction(["returns:int:1", None, "raises:X"], ["returns:int:1", "returns:int:2", "raises:X"]) == 2 / 3
    assert pass_fraction([], []) == 0.0


@pytest.mark.slow
def test_build_derives_tests_from_the_original_and_filters():
    executor = make_executor(SandboxConfig(timeout_s=2.0))
    (function,), _ = task_functions(CLAMP)
    built = build_function(executor, function, "hand", "0" * 64, seed=0, n_tests=12)
    # ints cannot be iterated and strings cannot be added to 0, so the first assignment
    # under which every probe returns is (list[int], int)
    assert built.kinds == ["list[int]", "int"]
    assert len(built.tests) == 12
    for test in built.tests:
        xs, limit = test["args"]
        assert test["expect"] == f"returns:int:{min(sum(xs), limit)}"
    record = built.record
    assert record["stage_reached"] == "kept" and record["drop_reason"] is None
    assert record["ref_pass_fraction"] == 1.0 and record["stub_pass_fraction"] == 0.0
    assert record["killed"]["return_none"] and record["killed"]["return_first_arg"]
    assert record["mutants"] == 5 and record["mutation_score"] == record["mutants_killed"] / 5

    (clock,), _ = task_functions(CLOCK)
    dropped = build_function(executor, clock, "hand", "0" * 64, seed=0, n_tests=8)
    assert dropped.record["stage_reached"] == "gate1"
    assert dropped.record["drop_reason"] == "original does not pass its own tests again (nondeterministic)"


SWAP = '''def swap_ends(xs):
    """Swap the first and last items of xs in place."""
    n = len(xs)
    if n >= 2:
        xs[0], xs[-1] = xs[-1], xs[0]
'''


@pytest.mark.slow
def test_in_place_changes_are_part_of_the_outcome():
    executor = make_executor(SandboxConfig(timeout_s=2.0))
    (function,), _ = task_functions(SWAP)
    built = build_function(executor, function, "hand", "0" * 64, seed=0, n_tests=8)
    # len() refuses ints and floats, and str items cannot be assigned: list[int] first
    assert built.kinds == ["list[int]"]
    for test in built.tests:
        (xs,) = test["args"]
        if len(xs) >= 2 and xs[0] != xs[-1]:
            after = list(xs)
            after[0], after[-1] = after[-1], after[0]
            items = ", ".join(f"{type(v).__name__}:{v!r}" for v in after)
            assert test["expect"] == f"returns:NoneType:None | args after: list[list[{items}]]"
    # `return None` leaves the list alone, so the tests that moved items kill it
    assert built.record["killed"]["return_none"]
