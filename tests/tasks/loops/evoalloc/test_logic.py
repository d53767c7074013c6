"""EvoAlloc's allocator on hand-built cases: the decision rule, promotion, counterfactual
draws, supporting/refuting cases, the refit and the shadow acceptance rule."""

import random

import pytest

from tasks.loops.evoalloc.logic import (
    AllocCase,
    AllocPolicy,
    counterfactual,
    decide,
    evals_to_target,
    missed,
    path,
    percentile,
    revise,
    shadow_accept,
    shadow_level,
    split_cases,
)

P = AllocPolicy(discard_below=0.25, full_above=0.9, promote_at=0.0)


def test_percentile_ranks_within_the_pool_worst_zero_best_one():
    pool = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert [percentile(v, pool) for v in pool] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert percentile(7.0, [7.0]) == 1.0
    assert percentile(2.0, [2.0, 2.0, 1.0]) == 1.0  # ties rank as high as the best of them


@pytest.mark.parametrize("pct,has_partial,expected", [
    (0.1, True, "discard"), (0.25, True, "partial"), (0.9, True, "partial"), (0.95, True, "full"),
    (0.1, False, "discard"), (0.5, False, "full"),  # no Partial level (circle_packing)
])
def test_the_decision_rule(pct, has_partial, expected):
    assert decide(P, pct, has_partial) == expected


def test_a_partial_path_costs_one_or_two_evaluations_by_the_partial_delta():
    assert path(P, AllocCase("a", 0.5, 0.01, True), True) == (2, True)
    assert path(P, AllocCase("b", 0.5, 0.0, False), True) == (2, True)  # as good as its parent: promoted
    assert path(P, AllocCase("b", 0.5, -0.01, False), True) == (1, False)  # below its parent: stops at Partial
    assert path(P, AllocCase("c", 0.1, None, None), True) == (0, False)
    assert path(P, AllocCase("d", 0.95, None, True), True) == (1, True)
    with pytest.raises(ValueError, match="no partial score"):
        path(P, AllocCase("e", 0.5, None, None), True)


def test_the_shadow_level_is_the_higher_of_both_decisions():
    strict = AllocPolicy(0.5, 1.0, 0.0)
    assert shadow_level([P, strict], 0.3, True) == "partial"
    assert shadow_level([P, strict], 0.1, True) == "discard"
    assert shadow_level([P, strict], 0.95, True) == "full"


def test_counterfactual_draws_are_seeded_and_hit_the_rate():
    assert counterfactual(7, 0.3) == (random.Random(7).random() < 0.3)
    assert not counterfactual(7, 0.0) and counterfactual(7, 1.0)
    hits = sum(counterfactual(s, 0.25) for s in range(4000))
    assert 900 <= hits <= 1100


CASES = [
    AllocCase("a", 0.10, None, True),    # a counterfactual discard that was a new best: refutes P
    AllocCase("b", 0.10, None, False),   # counterfactual, no new best: supports the discard
    AllocCase("c", 0.50, -0.2, True),    # new best whose partial fell short by 0.2: P would not promote
    AllocCase("d", 0.50, 0.1, False),    # promoted, no new best: refutes
    AllocCase("e", 0.95, None, True),    # Full at once, new best: supports
    AllocCase("f", 0.50, -0.1, None),    # never full-evaluated: no evidence
]


def test_supporting_and_refuting_cases():
    assert split_cases(P, CASES, True) == (["b", "e"], ["a", "c", "d"])


def test_the_refit_keeps_every_observed_new_best():
    new, note = revise(P, CASES, True)
    # lowest new-best parent percentile 0.10 -> the highest grid threshold at or below it is 0.0;
    # the lowest partial delta of a new best is -0.2 -> promote from -0.2 on
    assert new == AllocPolicy(0.0, 0.9, -0.2)
    assert note.startswith("2 supporting, 3 refuting of 5 full results (3 new bests")
    # no new best among the cases: one grid step stricter, margin unchanged
    quiet = [AllocCase("x", 0.6, 0.0, False), AllocCase("y", 0.8, -0.05, False)]
    assert revise(P, quiet, True)[0] == AllocPolicy(0.375, 0.9, 0.0)
    assert revise(AllocPolicy(0.75, 0.9, 0.0), quiet, True)[0].discard_below == 0.75  # capped
    # new bests at 0.4 and 0.7 -> 0.375; no Partial level -> margin kept
    seen = [AllocCase("p", 0.4, None, True), AllocCase("q", 0.7, None, True)]
    assert revise(P, seen, False)[0] == AllocPolicy(0.375, 0.9, 0.0)
    # every new best beat its parent's partial score by 0.3 or more: ties stop being promoted
    gains = [AllocCase("p", 0.5, 0.3, True), AllocCase("q", 0.6, 0.5, True), AllocCase("r", 0.6, 0.0, False)]
    assert revise(P, gains, True)[0] == AllocPolicy(0.5, 0.9, 0.3)


def test_missed_new_bests():
    assert [missed(P, c, True) for c in CASES] == [True, False, True, False, False, False]


def test_shadow_acceptance_fewer_missed_first_then_fewer_evaluations():
    strict = AllocPolicy(0.5, 1.0, 0.0)
    cases = [AllocCase("a", 0.3, 0.1, True), AllocCase("b", 0.3, -0.1, False), AllocCase("c", 0.6, -0.1, False)]
    # P: a partial+full (2), b partial (1), c partial (1) = 4 evals, 0 missed;
    # strict discards a and b (misses a), c partial (1) = 1 eval: fewer evals but a missed best
    accept, stats = shadow_accept(P, strict, cases, True)
    assert not accept
    assert stats == {"missed_best_old": 0, "missed_best_new": 1, "evals_old": 4, "evals_new": 1, "disagreements": 2}
    # the other way round: strict is old, P new: fewer missed wins despite more evaluations
    assert shadow_accept(strict, P, cases, True)[0]
    # equal missed, fewer evaluations wins; an identical policy never replaces the old one
    cheap = AllocPolicy(0.4, 0.9, 0.0)
    safe = [AllocCase("a", 0.5, 0.1, True), AllocCase("b", 0.3, -0.1, False)]
    # P: a partial+full (2), b partial (1) = 3; cheap: a 2, b discarded (0) = 2; neither misses a
    assert shadow_accept(P, cheap, safe, True) == (True, {"missed_best_old": 0, "missed_best_new": 0,
                                                          "evals_old": 3, "evals_new": 2, "disagreements": 1})
    assert not shadow_accept(P, P, CASES[:5], True)[0]


def test_full_evaluations_to_target():
    curve = [(1, 0.5), (2, 0.5), (3, 0.8), (4, 0.9)]
    assert evals_to_target(curve, 0.8) == 3
    assert evals_to_target(curve, 0.5) == 1
    assert evals_to_target(curve, 0.95) is None
