"""The EvoAlloc findings' per-seed figures on hand-built run records: the seed's target is
the lowest final best over the arms, full evaluations to it, the best at the fewest Full
evaluations any arm spent, and all evaluations."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "evoalloc_findings.py"


def record(curve, partial):
    return {"curve": curve, "full_evals": curve[-1][0], "partial_evals": partial, "best_score": curve[-1][1]}


def test_seed_metrics(bench):
    records = {
        "fixed": record([[1, 1.0], [2, 1.0], [3, 1.5], [4, 2.0], [5, 2.0]], 0),
        "one_shot": record([[1, 1.0], [2, 1.2], [3, 1.8]], 4),
        "evoalloc": record([[1, 1.0], [2, 1.8], [3, 1.8], [4, 1.9]], 6),
    }
    m = bench.seed_metrics(records)
    # target: min(2.0, 1.8, 1.9) = 1.8; equal Full budget: min(5, 3, 4) = 3
    assert {arm: v["to_target"] for arm, v in m.items()} == {"fixed": 4.0, "one_shot": 3.0, "evoalloc": 2.0}
    assert {arm: v["best_at_budget"] for arm, v in m.items()} == {"fixed": 1.5, "one_shot": 1.8, "evoalloc": 1.8}
    assert {arm: v["evaluations"] for arm, v in m.items()} == {"fixed": 5.0, "one_shot": 7.0, "evoalloc": 10.0}
    assert m["fixed"]["target"] == 1.8


def test_rows_pair_evoalloc_against_both_arms(bench):
    metrics = {s: bench.seed_metrics({"fixed": record([[1, 1.0], [2, 2.0]], 0),
                                      "one_shot": record([[1, 1.0], [2, 1.0], [3, 2.0]], 0),
                                      "evoalloc": record([[1, 2.0]], 1)}) for s in (0, 1)}
    rows = bench.rows(metrics, "bin_packing")
    to_target = [r for r in rows if r.metric == "Full evaluations to target"]
    assert [(r.a_name, r.a, r.b) for r in to_target] == [("fixed", (2.0, 2.0), (1.0, 1.0)),
                                                        ("one_shot", (3.0, 3.0), (1.0, 1.0))]
    assert to_target[1].differences == pytest.approx([-2.0, -2.0])
