"""The per-proposer verdict on hand-built searches: matching on (condition, seed), wins and
paired differences, the trial-1 rank, and feedback sensitivity with its CI."""

import pytest

from tasks.loops.prior_or_feedback.measures import evidence, matched, reason


def _search(condition, seed, proposer, test, vals, permuted, control, lr_moved=False):
    replays = ([{"intervention": "permuted", "norm_distance": d} for d in permuted]
               + [{"intervention": "control", "norm_distance": d} for d in control]
               + [{"intervention": "cold_start", "norm_distance": 0.0, "lr_moved": lr_moved}])
    return {"condition": condition, "seed": seed, "proposer": proposer, "test": test, "vals": vals, "replays": replays}


SEARCHES = [
    _search("a", 0, "random", 0.3, [0.5, 0.4, 0.2], [0.0], [0.3]),
    _search("a", 1, "random", 0.2, [0.6, 0.1, 0.3], [0.0], [0.5]),
    _search("a", 0, "prior", 0.1, [0.1, 0.2, 0.3], [0.4, 0.2], [0.1], lr_moved=True),
    _search("a", 1, "prior", 0.25, [0.2, 0.2, 0.2], [0.3], [0.1], lr_moved=True),
    _search("b", 0, "prior", 0.1, [0.1], [0.2], [0.2]),  # no matched random search
]


def test_matched_pairs_only_the_same_condition_and_seed():
    pairs = matched(SEARCHES, "prior", "random")
    assert [(a["seed"], b["seed"]) for a, b in pairs] == [(0, 0), (1, 1)]
    assert matched(SEARCHES, "prior", "tpe") == []


def test_evidence_by_hand():
    e = evidence(SEARCHES, "prior", resamples=200)
    # trial 1: 0.1 in (0.5, 0.4, 0.2): none lower; 0.2 in (0.6, 0.1, 0.3): one lower -> 1/3
    assert e["first_rank_fraction"] == pytest.approx((0 + 1 / 3) / 2)
    assert e["vs_random"]["diff"] == pytest.approx((-0.2 + 0.05) / 2)
    assert (e["vs_random"]["wins"], e["vs_random"]["losses"], e["vs_random"]["runs"]) == (1, 1, 2)
    # sensitivities per search: 0.3 - 0.1, 0.3 - 0.1, 0.2 - 0.2
    assert e["sensitivity"] == pytest.approx(0.4 / 3)
    assert e["sensitivity_ci"][0] <= e["sensitivity"] <= e["sensitivity_ci"][1]
    assert e["uses_feedback"] is (e["sensitivity_ci"][0] > 0)
    assert e["cold_start_lr_moved"] == pytest.approx(2 / 3) and e["permuted_changed"] == 1.0
    assert e["vs_tpe"]["runs"] == 0 and e["searches"] == 3


def test_random_is_the_negative_control_and_the_reason_says_so():
    e = evidence(SEARCHES, "random", resamples=200)
    assert e["sensitivity"] == pytest.approx(-0.4) and not e["uses_feedback"]
    assert e["first_rank_fraction"] == pytest.approx((2 / 3 + 2 / 3) / 2) and "vs_random" not in e
    text = reason(e)
    assert "permutation changed the proposal in 0%" in text and text.endswith("no evidence it uses feedback")


def test_a_first_trial_better_than_the_whole_pool_beats_all_of_it():
    best = [_search("a", 0, "random", 0.3, [0.5, 0.4], [0.0], [0.3]),
            _search("a", 0, "prior", 0.1, [0.1], [0.4], [0.1])]
    assert "trial 1 beats 100% of the matched random pool" in reason(evidence(best, "prior", resamples=100))
