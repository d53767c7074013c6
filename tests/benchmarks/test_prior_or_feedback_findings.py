"""The Prior-or-Feedback findings: the paired rows and the paper-shaped table on hand-built
searches (values by hand), and one tiny matched run end to end on pde1d."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "prior_or_feedback_findings.py"


def _search(condition, seed, proposer, test, permuted, control, vals=(0.3, 0.2, 0.1)):
    replays = ([{"intervention": "permuted", "norm_distance": d} for d in permuted]
               + [{"intervention": "control", "norm_distance": d} for d in control]
               + [{"intervention": "cold_start", "norm_distance": 0.0, "lr_moved": proposer == "prior"}])
    return {"condition": condition, "seed": seed, "proposer": proposer, "untuned": 0.5, "vals": list(vals),
            "chosen_t": 3, "test": test, "replays": replays}


def hand_built():
    out = []
    for k, condition in enumerate(("a->b", "c->d")):
        out += [_search(condition, 0, "random", 0.30, [0.0, 0.0], [0.4, 0.2], vals=(0.5, 0.4, 0.3)),
                _search(condition, 0, "tpe", 0.20 + 0.1 * k, [0.3, 0.5], [0.1, 0.1]),
                _search(condition, 0, "prior", 0.10, [0.2], [0.1], vals=(0.05, 0.2, 0.1))]
    return out


def test_paired_rows_by_hand(bench):
    rows = {(r.finding, r.metric): r for r in bench.paired_rows(hand_built())}
    assert rows[("prior vs random", "test nRMSE")].differences == pytest.approx([-0.2, -0.2])
    assert rows[("tpe vs random", "test nRMSE")].differences == pytest.approx([-0.1, 0.0])
    # random: 0 - 0.3; tpe: 0.4 - 0.1; prior: 0.2 - 0.1
    sens = rows[("tpe vs random", "feedback sensitivity")]
    assert sens.a == pytest.approx((-0.3, -0.3)) and sens.b == pytest.approx((0.3, 0.3))
    assert rows[("prior vs random", "feedback sensitivity")].differences == pytest.approx([0.4, 0.4])
    assert all(len(r.differences) == 2 for r in rows.values())


def test_headline_has_the_papers_shape(bench):
    text = bench.headline(hand_built(), resamples=200)
    lines = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert set(lines) >= {"random", "tpe", "prior"}
    # trial 1 against the random pool (0.5, 0.4, 0.3): no pool score is lower than prior's 0.05 or
    # tpe's 0.3 (100%); two are lower than random's own 0.5 (beats 1/3)
    assert "| 2/2 (-0.2000" in lines["prior"] and "| 100% | 100% |" in lines["prior"]
    assert "| 100% | 0% | 100% | 0.400 | 0.100 | +0.300 [+0.300, +0.300] | yes |" in lines["tpe"]
    assert lines["random"].endswith("| 33% | 0% | 0% | 0.000 | 0.300 | -0.300 [-0.300, -0.300] | no |")


def test_a_tiny_matched_run_is_paired_and_random_is_blind_to_feedback(bench):
    from schemas.prior_or_feedback import PriorOrFeedbackConfig

    settings = PriorOrFeedbackConfig(decision_points=(4,), replays_per_point=1, tpe_startup=2,
                                     cold_starts=("advection:1.0->advection:3.0",))
    sizes = {"train": 4, "select": 2, "holdout": 2, "per_case": 2}
    searches = bench.run_searches(["burgers:0.1->burgers:0.02"], [0], 4, sizes, settings)
    assert [s["proposer"] for s in searches] == ["random", "tpe", "prior"]
    assert len({s["untuned"] for s in searches}) == 1 and all(len(s["vals"]) == 4 for s in searches)
    assert all(0.0 <= s["test"] <= 10.0 and 1 <= s["chosen_t"] <= 4 for s in searches)
    random = next(s for s in searches if s["proposer"] == "random")
    assert [r["norm_distance"] for r in random["replays"] if r["intervention"] == "permuted"] == [0.0]
    assert all(len(r.differences) == 1 for r in bench.paired_rows(searches))
    assert "| prior |" in bench.headline(searches, resamples=100)
