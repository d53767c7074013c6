import json

import pytest

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import EvidenceRefused
from tasks.gate.library_guard import guard_due, guard_retire

ANCHOR = {"scorer_versions": {"v1"}, "anchored": "v1"}
FULL = {"c1": 0.5, "c2": 0.5, "c3": 1.0, "c4": 0.0}


def test_retires_the_member_whose_removal_helps_most_and_keeps_the_one_that_hurts():
    without = {
        "r-helps": {"c1": 1.0, "c2": 0.5, "c3": 1.0, "c4": 0.0},     # removal +0.125
        "r-helps-more": {"c1": 1.0, "c2": 1.0, "c3": 1.0, "c4": 0.0},  # removal +0.25
        "r-needed": {"c1": 0.0, "c2": 0.5, "c3": 1.0, "c4": 0.0},    # removal -0.125
    }
    result = guard_retire(FULL, without, **ANCHOR)
    assert result.retire == "r-helps-more"
    out = result.outcome
    assert out.decision == "reject" and out.delta == pytest.approx(0.25)
    assert out.improved_cases == ["c1", "c2"] and out.regressed_cases == []
    assert out.select_score == pytest.approx(0.75) and out.baseline_score == pytest.approx(0.5)
    assert "1 more retirable" in out.reason
    evidence = json.loads(out.evidence_json)
    assert evidence["retirable"] == ["r-helps-more", "r-helps"] and evidence["retired"] == "r-helps-more"
    assert evidence["members"]["r-needed"]["removal_delta"] == pytest.approx(-0.125)


def test_keeps_the_set_when_every_removal_hurts():
    result = guard_retire(FULL, {"r-needed": {"c1": 0.0, "c2": 0.5, "c3": 1.0, "c4": 0.0}}, **ANCHOR)
    assert result.retire is None and result.outcome.decision == "accept"
    assert "least harmful removal: r-needed -0.125" in result.outcome.reason
    assert result.outcome.select_score == pytest.approx(0.5) and result.outcome.n_cases == 4


def test_a_member_that_changes_nothing_is_retired_and_ties_go_by_id():
    result = guard_retire(FULL, {"r-b": dict(FULL), "r-a": dict(FULL)}, **ANCHOR)
    assert result.retire == "r-a" and result.outcome.delta == 0.0


def test_tolerance_boundary():
    hurts_a_little = {"r1": {"c1": 0.0, "c2": 0.5, "c3": 1.0, "c4": 0.0}}  # removal -0.125
    assert guard_retire(FULL, hurts_a_little, **ANCHOR, tolerance=0.125).retire == "r1"
    hurts_beyond = {"r1": {"c1": 0.0, "c2": 0.5, "c3": 1.0 - 1e-9, "c4": 0.0}}
    assert guard_retire(FULL, hurts_beyond, **ANCHOR, tolerance=0.125).retire is None


def test_empty_evidence_retires_nothing():
    no_members = guard_retire(FULL, {}, **ANCHOR)
    assert no_members.retire is None and no_members.outcome.decision == "accept"
    assert "no active member" in no_members.outcome.reason
    no_cases = guard_retire({}, {"r1": {}}, **ANCHOR)
    assert no_cases.retire is None and "no ablation case" in no_cases.outcome.reason


def test_bad_evidence_is_an_error():
    with pytest.raises(ValueError, match="not paired"):
        guard_retire(FULL, {"r1": {"c1": 1.0}}, **ANCHOR)
    with pytest.raises(ValueError, match="without 'r1' on 'c1'"):
        guard_retire(FULL, {"r1": {**FULL, "c1": float("nan")}}, **ANCHOR)
    with pytest.raises(ValueError, match="tolerance"):
        guard_retire(FULL, {}, **ANCHOR, tolerance=-1.0)
    with pytest.raises(EvidenceRefused):
        guard_retire(FULL, {}, scorer_versions={"v2"}, anchored="v1")


def test_outcomes_fit_the_row():
    for result in (guard_retire(FULL, {"r1": dict(FULL)}, **ANCHOR), guard_retire(FULL, {}, **ANCHOR)):
        row = GateDecisionRow(run_id="r", decision_id="d", round=0, candidate_id=result.retire or "active-set",
                              gate="library_guard", baseline_id=None, scorer_version="v1", **vars(result.outcome))
        assert row.decision in ("reject", "accept")


@pytest.mark.parametrize(("admissions", "interval", "due"), [(0, 10, False), (9, 10, False), (10, 10, True),
                                                             (12, 10, True), (1, 1, True)])
def test_guard_schedule(admissions, interval, due):
    assert guard_due(admissions, interval) is due


def test_guard_schedule_rejects_bad_counts():
    with pytest.raises(ValueError, match="interval 0"):
        guard_due(3, 0)
    with pytest.raises(ValueError, match="negative"):
        guard_due(-1)
