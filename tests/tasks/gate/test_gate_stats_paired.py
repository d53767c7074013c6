import math

import pytest

from tasks.gate.stats import paired_differences, unpaired_bootstrap_ci


def test_paired_differences_sorted_and_exact():
    cases, diffs = paired_differences({"b": 1.0, "a": 0.5}, {"a": 1.0, "b": 1.0})
    assert cases == ["a", "b"] and diffs == [-0.5, 0.0]
    assert paired_differences({}, {}) == ([], [])


def test_paired_differences_names_the_unpaired_cases():
    with pytest.raises(ValueError, match=r"candidate side \['c'\], only on the baseline side \['b'\]"):
        paired_differences({"a": 1.0, "c": 1.0}, {"a": 1.0, "b": 1.0})


def test_unpaired_bootstrap_ci_brackets_the_difference_and_degenerates():
    low, high = unpaired_bootstrap_ci([1.0, 2.0, 3.0], [0.0, 1.0], seed=2)
    assert low <= 2.0 - 0.5 <= high and -1.0 <= low and high <= 3.0
    assert unpaired_bootstrap_ci([1.0], [0.25]) == (0.75, 0.75)
    assert unpaired_bootstrap_ci([1.0, 0.0], [0.0], seed=5) == unpaired_bootstrap_ci([1.0, 0.0], [0.0], seed=5)
    assert all(math.isnan(x) for x in unpaired_bootstrap_ci([], [1.0]))
