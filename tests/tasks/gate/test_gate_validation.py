import dataclasses
import json

import pytest

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import EvidenceRefused
from tasks.gate.validation import Checkpoint, LoopState, validate_or_rollback, validation_due

ANCHOR = {"scorer_versions": {"v1"}, "anchored": "v1"}
ACCEPTED = LoopState("h1", window=("t3", "t4"), cursor=10, memories=("m1",), extra={"retries": {"t3": 1}})
CURRENT = LoopState("h2", window=("t4", "t7", "t8"), cursor=14, memories=("m1", "m2"), extra={"retries": {"t7": 2}})
CHECKPOINT = Checkpoint(ACCEPTED, {"v1": 1.0, "v2": 0.0, "v3": 1.0, "v4": 0.0})


def test_below_the_last_accepted_rolls_back_all_four_parts_of_the_state():
    result = validate_or_rollback(CURRENT, {"v1": 1.0, "v2": 0.0, "v3": 0.0, "v4": 0.0}, CHECKPOINT, **ANCHOR)
    assert result.outcome.decision == "rollback"
    assert result.resume == ACCEPTED
    assert (result.resume.artifact_id, result.resume.window, result.resume.cursor, result.resume.memories) == (
        "h1", ("t3", "t4"), 10, ("m1",))
    assert result.resume.extra == {"retries": {"t3": 1}}
    assert result.accepted is CHECKPOINT
    assert result.outcome.regressed_cases == ["v3"] and result.outcome.improved_cases == []
    assert result.outcome.delta == pytest.approx(-0.25)
    evidence = json.loads(result.outcome.evidence_json)
    assert evidence["rolled_back"] is True and evidence["restored"] == ACCEPTED.summary()
    assert evidence["restored"]["window"] == ["t3", "t4"] and evidence["current"]["cursor"] == 14


def test_a_tie_is_not_below_and_is_accepted():
    scores = {"v1": 0.0, "v2": 1.0, "v3": 1.0, "v4": 0.0}
    result = validate_or_rollback(CURRENT, scores, CHECKPOINT, **ANCHOR)
    assert result.outcome.decision == "accept" and result.outcome.delta == 0.0
    assert result.outcome.improved_cases == ["v2"] and result.outcome.regressed_cases == ["v1"]
    assert result.resume == CURRENT
    assert result.accepted == Checkpoint(CURRENT, scores)


def test_just_below_rolls_back_and_above_is_the_new_reference():
    just_below = validate_or_rollback(CURRENT, {"v1": 1.0, "v2": 0.0, "v3": 1.0, "v4": -1e-9}, CHECKPOINT, **ANCHOR)
    assert just_below.outcome.decision == "rollback" and just_below.resume == ACCEPTED
    above = validate_or_rollback(CURRENT, {"v1": 1.0, "v2": 1.0, "v3": 1.0, "v4": 0.0}, CHECKPOINT, **ANCHOR)
    assert above.outcome.decision == "accept" and above.accepted.score == pytest.approx(0.75)
    next_state = dataclasses.replace(CURRENT, artifact_id="h3", cursor=15)
    after = validate_or_rollback(next_state, {"v1": 1.0, "v2": 0.0, "v3": 1.0, "v4": 0.0}, above.accepted, **ANCHOR)
    assert after.outcome.decision == "rollback" and after.resume == CURRENT


def test_no_validation_evidence_rolls_back():
    result = validate_or_rollback(CURRENT, {}, CHECKPOINT, **ANCHOR)
    assert result.outcome.decision == "rollback" and result.outcome.n_cases == 0
    assert "no validation score" in result.outcome.reason
    assert result.resume == ACCEPTED and result.accepted is CHECKPOINT


def test_outcome_fits_the_row():
    outcome = validate_or_rollback(CURRENT, dict(CHECKPOINT.scores), CHECKPOINT, **ANCHOR).outcome
    row = GateDecisionRow(run_id="r", decision_id="d", round=3, candidate_id="h2", gate="growing_harness_validation",
                          baseline_id="h1", scorer_version="v1", **vars(outcome))
    assert row.decision == "accept" and row.n_cases == 4


def test_state_is_frozen_and_copied():
    window, extra = ["a"], {"k": 1}
    state = LoopState("h", window=window, cursor=0, extra=extra)
    window.append("b")
    extra["k"] = 2
    assert state.window == ("a",) and state.extra == {"k": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.cursor = 5
    with pytest.raises(TypeError):
        state.extra["k"] = 3


def test_bad_state_and_evidence_are_errors():
    with pytest.raises(ValueError, match="cursor -1"):
        LoopState("h", window=(), cursor=-1)
    with pytest.raises(TypeError, match="not one string"):
        LoopState("h", window="t1", cursor=0)
    with pytest.raises(ValueError, match="validate it first"):
        Checkpoint(ACCEPTED, {})
    with pytest.raises(ValueError, match="not paired"):
        validate_or_rollback(CURRENT, {"v1": 1.0}, CHECKPOINT, **ANCHOR)
    with pytest.raises(ValueError, match="'v1' for 'h2'"):
        validate_or_rollback(CURRENT, {"v1": float("nan")}, CHECKPOINT, **ANCHOR)
    with pytest.raises(EvidenceRefused):
        validate_or_rollback(CURRENT, {"v1": 1.0}, CHECKPOINT, scorer_versions={"v0"}, anchored="v1")


@pytest.mark.parametrize(
    ("fixes", "interval", "final", "due"),
    [(0, 1, False, False), (1, 1, False, True), (7, 8, False, False), (8, 8, False, True), (9, 8, False, True),
     (0, 8, True, True), (3, 8, True, True)],
)
def test_validation_schedule(fixes, interval, final, due):
    assert validation_due(fixes, interval=interval, final=final) is due


def test_schedule_rejects_bad_counts():
    with pytest.raises(ValueError, match="interval 0"):
        validation_due(1, interval=0)
    with pytest.raises(ValueError, match="negative"):
        validation_due(-1)
