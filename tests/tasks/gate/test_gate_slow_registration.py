import dataclasses
import json

import pytest

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import EvidenceRefused
from tasks.gate.slow_registration import FrozenTool, TrialBatch, admit_to_trial, registration_gate

ANCHOR = {"scorer_versions": {"v1"}, "anchored": "v1"}
TOOL = FrozenTool("seg-tool", code_id="c0ffee", deps_id="lock-9", stable_version="S4", weights_id="w-12")


def batch(batch_id, gain, cost_with=1.0, cost_without=1.0, base=0.6):
    return TrialBatch(batch_id, metric_with=base + gain, metric_without=base, cost_with=cost_with,
                      cost_without=cost_without)


def decide(batches, **kw):
    return registration_gate(TOOL, batches, current_stable_version=kw.pop("current", "S4"), **ANCHOR, **kw)


def test_discovery_gain_admits_to_trial_with_frozen_identifiers():
    out = admit_to_trial({"glaucoma": 0.8, "normal": 0.9}, {"glaucoma": 0.5, "normal": 0.9}, TOOL, **ANCHOR)
    assert out.decision == "trial" and out.delta == pytest.approx(0.15)
    assert out.improved_cases == ["glaucoma"] and out.regressed_cases == []
    evidence = json.loads(out.evidence_json)
    assert evidence["tool"] == {"tool_id": "seg-tool", "code_id": "c0ffee", "deps_id": "lock-9",
                                "stable_version": "S4", "weights_id": "w-12"}


def test_discovery_tie_boundary_and_empty_evidence_reject():
    assert admit_to_trial({"a": 0.5}, {"a": 0.5}, TOOL, **ANCHOR).decision == "reject"
    assert admit_to_trial({"a": 0.6}, {"a": 0.5}, TOOL, **ANCHOR, min_gain=0.125).decision == "reject"
    assert admit_to_trial({"a": 0.625 + 1e-9}, {"a": 0.5}, TOOL, **ANCHOR, min_gain=0.125).decision == "trial"
    empty = admit_to_trial({}, {}, TOOL, **ANCHOR)
    assert empty.decision == "reject" and "no discovery evidence" in empty.reason
    with pytest.raises(ValueError, match="not paired"):
        admit_to_trial({"a": 1.0}, {}, TOOL, **ANCHOR)


def test_registers_on_mean_gain_though_one_batch_got_worse():
    out = decide([batch("b1", 0.25), batch("b2", -0.125), batch("b3", 0.125)])
    assert out.decision == "accept"
    assert out.delta == pytest.approx(0.25 / 3) and out.n_cases == 3
    assert out.improved_cases == ["b1", "b3"] and out.regressed_cases == ["b2"]
    assert "2 of 3 batch(es) improved" in out.reason


def test_positive_gain_with_higher_cost_is_rejected():
    out = decide([batch("b1", 0.25, cost_with=2.0), batch("b2", 0.25), batch("b3", 0.25)])
    assert out.decision == "reject" and out.delta == pytest.approx(0.25)
    assert "(increased)" in out.reason
    evidence = json.loads(out.evidence_json)
    assert evidence["gain_ok"] is True and evidence["cost_ok"] is False
    same_mean_cost = [batch("b1", 0.25, cost_with=2.0, cost_without=1.5),
                      batch("b2", 0.25, cost_with=1.0, cost_without=1.5), batch("b3", 0.25)]
    assert decide(same_mean_cost).decision == "accept"


def test_threshold_boundary():
    at = [batch("b1", 0.25), batch("b2", 0.0), batch("b3", 0.125)]
    assert decide(at, threshold=0.125).decision == "reject"
    beyond = [batch("b1", 0.25), batch("b2", 0.0), batch("b3", 0.125 + 3e-9)]
    assert decide(beyond, threshold=0.125).decision == "accept"
    assert decide([batch("b1", 0.0), batch("b2", 0.0), batch("b3", 0.0)]).decision == "reject"


def test_changed_stable_set_means_retest():
    out = decide([batch("b1", 0.5), batch("b2", 0.5), batch("b3", 0.5)], current="S5")
    assert out.decision == "trial" and "re-test against the current stable set" in out.reason
    assert "S4 -> S5" in out.reason and json.loads(out.evidence_json)["retest"] is True
    refrozen = dataclasses.replace(TOOL, stable_version="S5")
    again = registration_gate(refrozen, [batch("b4", 0.5), batch("b5", 0.5), batch("b6", 0.5)],
                              current_stable_version="S5", **ANCHOR)
    assert again.decision == "accept"


def test_trial_waits_for_its_batches_and_ignores_later_ones():
    assert decide([]).decision == "trial"
    waiting = decide([batch("b1", 0.5), batch("b2", 0.5)])
    assert waiting.decision == "trial" and "2 of 3 trial batches so far" in waiting.reason
    out = decide([batch("b1", 0.0), batch("b2", 0.0), batch("b3", 0.0), batch("b4", 0.9)])
    assert out.decision == "reject" and json.loads(out.evidence_json)["ignored_batches"] == ["b4"]
    assert decide([batch("b1", 0.5)], n_batches=1).decision == "accept"


def test_bad_trial_evidence_is_an_error():
    with pytest.raises(ValueError, match="more than once"):
        decide([batch("b1", 0.5), batch("b1", 0.5), batch("b2", 0.5)])
    with pytest.raises(ValueError, match="'b1' cost_with"):
        batch("b1", 0.5, cost_with=float("inf"))
    with pytest.raises(ValueError, match="n_batches 0"):
        decide([], n_batches=0)
    with pytest.raises(EvidenceRefused):
        registration_gate(TOOL, [], current_stable_version="S4", scorer_versions={"v2"}, anchored="v1")


def test_outcomes_fit_the_row():
    for outcome in (decide([batch("b1", 0.5)]), decide([batch(f"b{i}", 0.5) for i in range(3)]),
                    admit_to_trial({"a": 1.0}, {"a": 0.0}, TOOL, **ANCHOR)):
        row = GateDecisionRow(run_id="r", decision_id="d", round=1, candidate_id=TOOL.tool_id, gate="medrsi",
                              baseline_id="S4", scorer_version="v1", **vars(outcome))
        assert row.decision in ("trial", "accept")
