import math
import random

from tasks.loops.rsiagent.curriculum import (CellStats, breadth_plan, cell_stats, cells, depth_plan, depth_score)

TRAIN = {"b": ["b/005", "b/000"], "a": ["a/000", "a/005", "a/010"]}


def test_cells_are_template_x_first_params_x_events_sorted():
    assert cells(TRAIN, 2, ["calm", "stormy"]) == [
        ("a", "a/000", "calm"), ("a", "a/000", "stormy"), ("a", "a/005", "calm"), ("a", "a/005", "stormy"),
        ("b", "b/000", "calm"), ("b", "b/000", "stormy"), ("b", "b/005", "calm"), ("b", "b/005", "stormy")]


def test_breadth_is_stratified_over_templates_and_covers_cells_before_repeating():
    grid = cells(TRAIN, 2, ["calm", "stormy"])
    plan = breadth_plan(grid, {}, 8, 2, random.Random(0))
    assert [c[0] for c, _ in plan] == ["a", "b"] * 4
    assert sorted(c for c, _ in plan) == sorted(grid)  # 8 slots, 8 cells: each exactly once
    assert [w for _, w in plan] == [0, 1] * 4


def test_breadth_takes_the_least_visited_template_first():
    grid = cells(TRAIN, 1, ["calm"])
    plan = breadth_plan(grid, {("a", "a/000", "calm"): 3}, 2, 2, random.Random(0))
    assert [c for c, _ in plan] == [("b", "b/000", "calm"), ("b", "b/000", "calm")]


def test_cell_stats_marks_only_a_never_seen_signature_as_novel():
    x, y = ("a", "a/000", "calm"), ("b", "b/000", "calm")
    stats = cell_stats([(x, False, "get_order:rate_limited"), (y, False, "get_order:rate_limited"), (x, True, None),
                        (y, False, "unmet:refund")])
    assert (stats[x].runs, stats[x].successes, stats[x].novel) == (2, 1, False)
    assert (stats[y].runs, stats[y].successes, stats[y].novel) == (2, 0, True)


def test_depth_score_by_hand():
    # 1 - (1+1)/(3+2) = 0.6; novelty 1; 0.5 * sqrt(ln(11)/4)
    s = CellStats(runs=3, successes=1, novel=True)
    assert math.isclose(depth_score(s, 10, 1.0, 0.5), 0.6 + 1.0 + 0.5 * math.sqrt(math.log(11) / 4))
    assert math.isclose(depth_score(None, 0, 1.0, 0.0), 0.5)


def test_depth_targets_the_lowest_verified_success_and_new_signatures():
    grid = cells(TRAIN, 1, ["calm", "stormy"])  # a-calm, a-stormy, b-calm, b-stormy
    stats = {grid[0]: CellStats(4, 4), grid[1]: CellStats(4, 0), grid[2]: CellStats(4, 2, novel=True),
             grid[3]: CellStats(4, 2)}
    plan = depth_plan(grid, stats, 2, 2, novelty=1.0, explore=0.0)
    assert plan == [(grid[2], 0), (grid[1], 1)]  # 1.5 (novel) > 0.833 (all failed) > 0.5 > 0.167
