"""The protocol's statistics on hand-built runs: paired per-task differences, the cost
audit's re-derived input, missing-usage bounds and the permutation test."""

import math

import pytest

from tasks.loops.harness_or_model.evidence import (Run, cost_audit, cost_per_solved, group_permutation_p,
                                                   paired_difference, priced, run_costs, task_means)

PRICES = {"in": 1.0, "cached": 0.1, "out": 4.0}


def run(arm, task, seed, success, usage=(1000.0, 0.0, 0.0)):
    metrics = {"success": float(success)}
    used = None if usage is None else dict(zip(("in_tok", "cached_tok", "out_tok"), usage))
    return Run(arm, task, seed, metrics, used, f"{arm}-{task}-{seed}")


def test_seeds_are_averaged_inside_a_task_before_pairing():
    runs = [run("a", "t1", 0, 1), run("a", "t1", 1, 0), run("b", "t1", 0, 1), run("b", "t1", 1, 1),
            run("a", "t2", 0, 0), run("a", "t2", 1, 0), run("b", "t2", 0, 0), run("b", "t2", 1, 1)]
    assert task_means(runs, "a", "success") == {"t1": 0.5, "t2": 0.0}
    found = paired_difference(runs, "a", "b", "success", resamples=500, seed=0)
    assert (found.mean_a, found.mean_b, found.delta, found.n_tasks) == (0.25, 0.75, 0.5, 2)
    assert found.ci == (0.5, 0.5)  # both tasks differ by +0.5: every resample is +0.5
    assert found.shown


def test_a_ci_with_zero_in_it_shows_nothing():
    runs = [run("a", "t1", 0, 0), run("b", "t1", 0, 1), run("a", "t2", 0, 1), run("b", "t2", 0, 0)]
    found = paired_difference(runs, "a", "b", "success", resamples=2000, seed=0)
    assert found.delta == 0.0 and found.ci[0] < 0 < found.ci[1] and not found.shown


def test_unpaired_tasks_are_refused():
    with pytest.raises(ValueError, match="not paired"):
        paired_difference([run("a", "t1", 0, 1), run("b", "t2", 0, 1)], "a", "b", "success", 100, 0)


def test_cached_prompt_is_taken_out_of_input_only_where_the_harness_counted_it_in():
    usage = {"in_tok": 1500.0, "cached_tok": 500.0, "out_tok": 100.0}
    assert priced(usage, cache_included=True, prices=PRICES) == pytest.approx((1000 + 50 + 400) / 1000)
    assert priced(usage, cache_included=False, prices=PRICES) == pytest.approx((1500 + 50 + 400) / 1000)


def test_missing_usage_is_filled_low_mid_high_per_arm():
    runs = [run("a", "t1", 0, 1, (1000.0, 0.0, 0.0)), run("a", "t2", 0, 1, (3000.0, 0.0, 0.0)),
            run("a", "t3", 0, 0, None)]
    included = {"a": False}
    assert run_costs(runs, included, PRICES, "low") == [1.0, 3.0, 0.0]
    assert run_costs(runs, included, PRICES, "mid") == [1.0, 3.0, 2.0]
    assert run_costs(runs, included, PRICES, "high") == [1.0, 3.0, 3.0]
    assert cost_per_solved(runs, [1.0, 3.0, 2.0], "a") == 3.0  # 6 over 2 solved
    assert cost_per_solved([run("a", "t1", 0, 0)], [1.0], "a") == math.inf


def test_cost_ratio_and_its_bounds_over_every_filling():
    runs = [run("a", "t1", 0, 1, (1000.0, 0.0, 0.0)), run("a", "t2", 0, 1, None),
            run("b", "t1", 0, 1, (2000.0, 0.0, 0.0)), run("b", "t2", 0, 1, (2000.0, 0.0, 0.0))]
    found = cost_audit(runs, "a", "b", {"a": False, "b": False}, PRICES, resamples=500, seed=0)
    # a: 1.0 + {0, 1, 1} over 2 solved -> low 0.5, mid 1.0, high 1.0; b: 4.0 / 2 = 2.0 at every filling
    assert found.per_solved == {"a": {"low": 0.5, "mid": 1.0, "high": 1.0}, "b": {"low": 2.0, "mid": 2.0, "high": 2.0}}
    assert found.ratio == 2.0 and found.ratio_bounds == (2.0, 4.0)
    assert found.missing == {"a": 1, "b": 0}
    assert found.ratio_ci == (2.0, 2.0)  # per task b costs 2.0 and a 1.0 (mid): every resample gives 2


def test_permutation_p_of_an_exact_split_is_the_share_of_labelings_as_extreme():
    # four tasks, two per group; effects +1, +1 in g1 and 0, 0 in g2: observed 1.0, and of the 6 equally
    # likely labelings 2 are as extreme (the observed and its mirror), so p tends to 1/3
    diffs = {"t1": 1.0, "t2": 1.0, "t3": 0.0, "t4": 0.0}
    groups = {"t1": "g1", "t2": "g1", "t3": "g2", "t4": "g2"}
    observed, p = group_permutation_p(diffs, groups, resamples=20000, seed=0)
    assert observed == 1.0
    assert p == pytest.approx(1 / 3, abs=0.02)


def test_permutation_needs_two_groups():
    with pytest.raises(ValueError, match="two groups"):
        group_permutation_p({"t1": 1.0}, {"t1": "g1"}, resamples=100, seed=0)
