"""The shared decision-row builder and paired outcome (tasks.gate.rows): the decision id
is derived from the run id and the given parts, the outcome's fields land unchanged,
and a paired comparison gives hand-computed improved / regressed cases, means, delta,
CI and strict evidence JSON."""

import json
import math

import pytest

from schemas.ids import derived_id
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row, paired_outcome, paired_scores
from tasks.gate.stats import paired_bootstrap_ci
from tasks.runtime.context import RunRef

REF = RunRef(store_uri="memory://unused", run_id="run-1")
OUTCOME = GateOutcome(decision="accept", reason="because", improved_cases=["a"], regressed_cases=["c"],
                      select_score=0.75, baseline_score=0.5, delta=0.25, ci_low=0.1, ci_high=0.4, n_cases=3,
                      evidence_json='{"k": 1}')


def test_the_decision_id_defaults_to_candidate_gate_and_round():
    row = decision_row(REF, 4, "cand", "my_gate", "champ", OUTCOME, scorer_version="v1")
    assert row.decision_id == derived_id("run-1", "cand", "my_gate", 4)
    assert (row.run_id, row.round, row.candidate_id, row.gate, row.baseline_id, row.scorer_version) == (
        "run-1", 4, "cand", "my_gate", "champ", "v1")
    assert {k: getattr(row, k) for k in vars(OUTCOME)} == vars(OUTCOME)


def test_explicit_id_parts_replace_the_default():
    row = decision_row(REF, 4, "kept", "guard", None, OUTCOME, id_parts=("champ", "guard", 4, 2), scorer_version="v1")
    assert row.decision_id == derived_id("run-1", "champ", "guard", 4, 2)
    assert row.candidate_id == "kept" and row.baseline_id is None
    no_key = decision_row(REF, 4, "cand", "seed", None, OUTCOME, id_parts=("cand", "seed"), scorer_version="v1")
    assert no_key.decision_id == derived_id("run-1", "cand", "seed")


def test_three_cases_give_the_hand_computed_paired_outcome():
    candidate = {"c": 0.25, "a": 1.0, "b": 0.5}  # diffs: a +0.5, b 0, c -0.25
    baseline = {"a": 0.5, "b": 0.5, "c": 0.5}
    paired = paired_scores(candidate, baseline, resamples=500, seed=7)
    assert paired.cases == ["a", "b", "c"] and paired.diffs == [0.5, 0.0, -0.25]
    assert paired.candidate == [1.0, 0.5, 0.25] and paired.baseline == [0.5, 0.5, 0.5]
    assert paired.candidate_mean == pytest.approx(1.75 / 3) and paired.baseline_mean == 0.5
    assert paired.delta == pytest.approx(0.25 / 3)
    assert (paired.ci_low, paired.ci_high) == paired_bootstrap_ci([0.5, 0.0, -0.25], resamples=500, seed=7)
    assert -0.25 <= paired.ci_low <= paired.delta <= paired.ci_high <= 0.5

    outcome = paired_outcome(paired, "accept", "why", {"split": "select"})
    assert (outcome.decision, outcome.reason) == ("accept", "why")
    assert outcome.improved_cases == ["a"] and outcome.regressed_cases == ["c"] and outcome.n_cases == 3
    assert (outcome.select_score, outcome.baseline_score, outcome.delta) == (
        paired.candidate_mean, 0.5, paired.delta)
    assert outcome.evidence_json == (
        '{"baseline": [0.5, 0.5, 0.5], "candidate": [1.0, 0.5, 0.25], "cases": ["a", "b", "c"], "split": "select"}')


def test_no_case_gives_zero_means_and_a_null_interval():
    paired = paired_scores({}, {}, resamples=10, seed=0)
    assert (paired.candidate_mean, paired.baseline_mean, paired.delta) == (0.0, 0.0, 0.0)
    assert math.isnan(paired.ci_low) and math.isnan(paired.ci_high)
    outcome = paired_outcome(paired, "reject", "nothing", {"extra": math.inf})
    assert (outcome.ci_low, outcome.ci_high, outcome.n_cases) == (None, None, 0)
    assert json.loads(outcome.evidence_json) == {"baseline": [], "candidate": [], "cases": [], "extra": None}


def test_unpaired_evidence_is_refused():
    with pytest.raises(ValueError, match="not paired"):
        paired_scores({"a": 1.0}, {"b": 1.0}, resamples=10, seed=0)
