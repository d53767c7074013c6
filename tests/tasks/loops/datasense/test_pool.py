"""The datasense pool, selectors and measures on hand-built rows and vectors."""

import math

import numpy as np
import pytest

from tasks.gate.stats import spearman
from tasks.loops.datasense.pool import Row, Submission, build_pool, check_submission, equal_groups, select
from tasks.loops.datasense.verdict import judge

SHARES = {"wrong_label": 0.2, "duplicate": 0.15, "off_task": 0.1}


def test_pool_is_seeded_with_defects_near_their_shares():
    rows = build_pool(("add", "rev", "sort"), 600, SHARES, seed=0)
    assert rows == build_pool(("add", "rev", "sort"), 600, SHARES, seed=0)
    assert [r.row_id for r in rows] == list(range(600))
    share = {d: sum(r.defect == d for r in rows) / 600 for d in SHARES}
    assert all(abs(share[d] - SHARES[d]) < 0.06 for d in SHARES), share
    originals = {(r.prompt, r.target) for r in rows if r.defect != "duplicate"}
    assert all((r.prompt, r.target) in originals for r in rows if r.defect == "duplicate")


def rows_of(targets: list[str], prompts: list[str] | None = None) -> list[Row]:
    prompts = prompts or [f"p{i}" for i in range(len(targets))]
    return [Row(i, "add", p, t, "clean") for i, (p, t) in enumerate(zip(prompts, targets))]


def test_loss_selector_puts_the_lowest_loss_rows_first():
    rows = rows_of(["a"] * 6)
    found = select("loss", rows, {0: 0.5, 1: 0.1, 2: 0.9, 3: 0.2, 4: 0.3, 5: 0.8}, n_groups=3, seed=0)
    assert found.groups == ((1, 3), (4, 0), (5, 2)) and found.predicted_rank == (1, 2, 3)


def test_length_and_dedup_selectors():
    rows = rows_of(["aaaa", "a", "aaa", "aa"])
    assert select("length", rows, {}, 2, 0).groups == ((0, 2), (3, 1))
    dup = rows_of(["x", "x", "y", "z"], prompts=["long prompt", "long prompt", "p", "pq"])
    # the repeat of row 0 goes last; unique rows by prompt length
    assert select("dedup_difficulty", dup, {}, 2, 0).groups == ((0, 3), (2, 1))


def test_random_is_seeded_and_every_selector_is_valid():
    rows = build_pool(("add", "sort"), 100, SHARES, seed=1)
    losses = {r.row_id: float(len(r.target)) for r in rows}
    assert select("random", rows, losses, 5, 3) == select("random", rows, losses, 5, 3)
    for name in ("random", "loss", "length", "dedup_difficulty", "mixed"):
        assert check_submission(select(name, rows, losses, 5, 3), rows, 5) is None, name
    with pytest.raises(ValueError, match="known: random"):
        select("oracle", rows, losses, 5, 3)


def test_invalid_submissions_are_named():
    rows = rows_of(["a"] * 4)
    assert check_submission(Submission("x", ((0, 1), (2,)), (1, 2)), rows, 2) == "needs 2 groups of equal size"
    assert check_submission(Submission("x", ((0, 1), (1, 2)), (1, 2)), rows, 2) == \
        "groups must be disjoint and cover the pool"
    assert check_submission(Submission("x", ((0, 1), (2, 3)), (1, 1)), rows, 2).startswith("predicted ranks")
    with pytest.raises(ValueError, match="does not split"):
        equal_groups([0, 1, 2], 2)


def test_spearman_by_hand():
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)  # 1 - 6*2/(4*15)
    assert math.isnan(spearman([1, 2, 3], [5, 5, 5]))


def test_judge_measures_the_prediction_against_the_students():
    groups = [np.array([1, 1, 0, 1]), np.array([0, 1, 0, 0]), np.array([0, 0, 0, 0])]  # 0.75, 0.25, 0
    references = [np.array([1, 0, 0, 0]), np.array([0, 0, 1, 0])]  # per case mean .5 0 .5 0
    found = judge(Submission("s", ((0,), (1,), (2,)), (1, 2, 3)), groups, references, resamples=500, seed=0)
    assert found["actual_accuracy"] == [0.75, 0.25, 0.0] and found["top1_hit"]
    assert found["delta"] == pytest.approx(0.75 - 0.25)  # case diffs .5, 1, -.5, 1
    assert found["spearman"] == pytest.approx(1.0)
    wrong = judge(Submission("s", ((0,), (1,), (2,)), (3, 2, 1)), groups, references, resamples=500, seed=0)
    assert not wrong["top1_hit"] and wrong["spearman"] == pytest.approx(-1.0) and wrong["delta"] == pytest.approx(-0.25)
