import json
import math
import random

import duckdb
import pytest

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import EvidenceRefused
from tasks.gate.paired_replay import (
    FollowupRun,
    ReplayCase,
    ReplayRule,
    designer_rsi_rule,
    followup_gate,
    paired_replay_gate,
    select_replay,
)

ANCHOR = {"scorer_versions": {"v1"}, "anchored": "v1"}
RULE = ReplayRule(primary="success")


def case(case_id, role, before, after, **other):
    """A replayed case measuring `success` plus any other metrics given as (before, after)."""
    return ReplayCase(case_id, role, {"success": before, **{m: b for m, (b, _) in other.items()}},
                      {"success": after, **{m: a for m, (_, a) in other.items()}})


def evidence(outcome):
    return json.loads(outcome.evidence_json)


def test_accepts_a_fixed_trigger_that_breaks_nothing():
    out = paired_replay_gate([case("t1", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 1.0),
                              case("p2", "protected", 1.0, 1.0)], RULE, **ANCHOR)
    assert out.decision == "accept"
    assert out.improved_cases == ["t1"] and out.regressed_cases == []
    assert out.select_score == pytest.approx(1.0) and out.baseline_score == pytest.approx(2 / 3)
    assert out.delta == pytest.approx(1 / 3) and out.n_cases == 3
    ev = evidence(out)
    assert ev["path"] == "replay" and ev["fixed_trigger"] is True and ev["broke_protected"] is False
    assert ev["rule"]["k"] == 3 and ev["rule"]["tolerance"] == 0.0
    assert [c["case_id"] for c in ev["cases"]] == ["t1", "p1", "p2"]
    assert ev["cases"][0]["gain"] == {"success": 1.0} and ev["cases"][0]["improved"] is True


def test_fixed_trigger_but_broke_protected_is_rejected_and_flagged():
    out = paired_replay_gate([case("t1", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 0.0),
                              case("p2", "protected", 1.0, 1.0)], RULE, **ANCHOR)
    assert out.decision == "reject"
    assert "fixed its trigger but broke a protected case" in out.reason
    assert "protected p1 (success 1 -> 0)" in out.reason
    assert out.improved_cases == ["t1"] and out.regressed_cases == ["p1"]
    ev = evidence(out)
    assert ev["fixed_trigger"] is True and ev["broke_protected"] is True
    assert ev["fixed_trigger_cases"] == ["t1"] and ev["broken_protected_cases"] == ["p1"]


def test_tie_is_no_improvement():
    out = paired_replay_gate([case("t1", "trigger", 0.0, 0.0), case("p1", "protected", 1.0, 1.0)], RULE, **ANCHOR)
    assert out.decision == "reject" and out.delta == 0.0 and out.improved_cases == []
    assert "no trigger case improved on success" in out.reason
    assert evidence(out)["fixed_trigger"] is False


def test_tolerance_boundary_exactly_at_versus_just_beyond():
    rule = ReplayRule(primary="success", tolerance=0.25)
    at = [case("t1", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 1.0, completion=(1.0, 0.75))]
    assert paired_replay_gate(at, rule, **ANCHOR).decision == "accept"
    beyond = [case("t1", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 1.0, completion=(1.0, 0.75 - 1e-9))]
    out = paired_replay_gate(beyond, rule, **ANCHOR)
    assert out.decision == "reject" and out.regressed_cases == ["p1"]
    assert evidence(out)["cases"][1]["regressed_metrics"] == ["completion"]


def test_default_tolerance_refuses_any_drop_even_on_a_trigger_secondary_metric():
    out = paired_replay_gate([case("t1", "trigger", 0.0, 1.0, completion=(0.5, 0.49))], RULE, **ANCHOR)
    assert out.decision == "reject" and out.regressed_cases == ["t1"]
    assert evidence(out)["broke_protected"] is False


def test_lower_is_better_metrics_regress_upwards():
    rule = ReplayRule(primary="success", lower_is_better=("cost",))
    cheaper = [case("t1", "trigger", 0.0, 1.0, cost=(2.0, 1.0))]
    assert paired_replay_gate(cheaper, rule, **ANCHOR).decision == "accept"
    dearer = [case("t1", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 1.0, cost=(2.0, 2.5))]
    out = paired_replay_gate(dearer, rule, **ANCHOR)
    assert out.decision == "reject" and "protected p1 (cost 2 -> 2.5)" in out.reason


def test_empty_evidence_and_protected_only_reject():
    empty = paired_replay_gate([], RULE, **ANCHOR)
    assert empty.decision == "reject" and empty.n_cases == 0 and "no replay evidence" in empty.reason
    assert evidence(empty)["fixed_trigger"] is False and evidence(empty)["cases"] == []
    protected_only = paired_replay_gate([case("p1", "protected", 1.0, 1.0)], RULE, **ANCHOR)
    assert protected_only.decision == "reject" and "no trigger case improved" in protected_only.reason


def test_selection_is_deterministic_and_order_independent():
    triggers, protected = [f"t{i}" for i in range(6)], [f"p{i}" for i in range(5)]
    assert select_replay(triggers, protected) == (("t2", "t1", "t0"), ("p1", "p2"))
    assert select_replay(triggers, protected, salt="rule-7") == (("t0", "t3", "t4"), ("p3", "p1"))
    shuffled_t, shuffled_p = random.Random(3).sample(triggers, 6), random.Random(4).sample(protected, 5)
    assert select_replay(shuffled_t, shuffled_p) == select_replay(triggers, protected)
    every_t, every_p = select_replay(triggers, protected, k=None, m=None)
    assert sorted(every_t) == triggers and sorted(every_p) == protected
    assert every_t[:3] == ("t2", "t1", "t0") and every_p[:2] == ("p1", "p2")


def test_gate_weighs_only_the_selected_cases():
    cases = [case(f"t{i}", "trigger", 0.0, 0.0) for i in range(6)]
    cases += [case(f"p{i}", "protected", 1.0, 1.0) for i in range(5)]
    # t5 is not among the selected triggers (t2, t1, t0): its fix is not weighed ...
    cases[5] = case("t5", "trigger", 0.0, 1.0)
    # ... and p4's break is not either (selected protected: p1, p2).
    cases[10] = case("p4", "protected", 1.0, 0.0)
    out = paired_replay_gate(list(reversed(cases)), RULE, **ANCHOR)
    ev = evidence(out)
    assert ev["replayed"] == {"trigger": ["t2", "t1", "t0"], "protected": ["p1", "p2"]}
    assert ev["available"] == {"trigger": 6, "protected": 5}
    assert out.decision == "reject" and out.n_cases == 5 and out.regressed_cases == []
    cases[2] = case("t2", "trigger", 0.0, 1.0)
    assert paired_replay_gate(cases, RULE, **ANCHOR).decision == "accept"


def test_designer_rsi_admits_an_improvement_on_an_old_success():
    better_old_success = [case("t1", "trigger", 0.0, 0.0), case("s1", "protected", 0.6, 0.8),
                          case("s2", "protected", 0.7, 0.7), case("s3", "protected", 0.9, 0.9)]
    designer = paired_replay_gate(better_old_success, designer_rsi_rule("success"), **ANCHOR)
    assert designer.decision == "accept" and designer.improved_cases == ["s1"] and designer.n_cases == 4
    ev = evidence(designer)
    assert ev["gate"] == "designer_rsi_replay" and ev["rule"]["k"] is None and ev["rule"]["improvement_on"] == "any"
    assert paired_replay_gate(better_old_success, RULE, **ANCHOR).decision == "reject"
    regressed = better_old_success + [case("s4", "protected", 1.0, 0.9)]
    assert paired_replay_gate(regressed, designer_rsi_rule("success"), **ANCHOR).decision == "reject"


def test_bad_evidence_is_an_error_that_names_the_case():
    with pytest.raises(ValueError, match="'x'.*role 'failing'"):
        ReplayCase("x", "failing", {"success": 0.0}, {"success": 1.0})
    with pytest.raises(ValueError, match="'x'.*same metrics"):
        ReplayCase("x", "trigger", {"success": 0.0}, {"success": 1.0, "cost": 1.0})
    with pytest.raises(ValueError, match=r"'x' after\['success'\]"):
        ReplayCase("x", "trigger", {"success": 0.0}, {"success": math.nan})
    with pytest.raises(ValueError, match="more than once"):
        paired_replay_gate([case("t1", "trigger", 0.0, 1.0), case("t1", "trigger", 0.0, 1.0)], RULE, **ANCHOR)
    with pytest.raises(ValueError, match="primary metric 'completion'"):
        paired_replay_gate([case("t1", "trigger", 0.0, 1.0)], ReplayRule(primary="completion"), **ANCHOR)
    with pytest.raises(EvidenceRefused):
        paired_replay_gate([case("t1", "trigger", 0.0, 1.0)], RULE, scorer_versions={"v1", "v2"}, anchored="v1")
    with pytest.raises(ValueError, match="tolerance"):
        ReplayRule(primary="success", tolerance=-0.1)
    with pytest.raises(ValueError, match="improvement_on"):
        ReplayRule(primary="success", improvement_on="protected")
    with pytest.raises(TypeError, match="tuple of metric names"):
        ReplayRule(primary="success", lower_is_better="cost")


def run(case_id, success, **other):
    return FollowupRun(case_id, {"success": success, **other})


def test_followup_path_accepts_on_weaker_evidence_and_says_so():
    out = followup_gate([run("a", 1.0), run("b", 1.0), run("c", 0.0)],
                        [run("x", 0.0), run("y", 0.0), run("z", 1.0), run("w", 0.0)], RULE, **ANCHOR)
    assert out.decision == "accept"
    assert "follow-up path, weaker evidence (3 unpaired run(s), no protected cases)" in out.reason
    assert out.select_score == pytest.approx(2 / 3) and out.baseline_score == pytest.approx(0.25)
    assert out.delta == pytest.approx(2 / 3 - 0.25) and out.n_cases == 3
    assert out.improved_cases == ["a", "b"] and out.regressed_cases == []
    assert out.ci_low <= out.delta <= out.ci_high
    ev = evidence(out)
    assert ev["path"] == "followup" and ev["weaker_evidence"] is True
    assert ev["fixed_trigger"] is None and ev["broke_protected"] is None


def test_followup_uses_the_next_n_runs_and_waits_for_them():
    baseline = [run("x", 0.0)]
    waiting = followup_gate([run("a", 1.0)], baseline, RULE, **ANCHOR)
    assert waiting.decision == "trial" and "1 of 3 follow-up runs so far" in waiting.reason
    later_runs_ignored = followup_gate([run("a", 0.0), run("b", 0.0), run("c", 0.0), run("d", 1.0)], baseline,
                                       RULE, **ANCHOR)
    assert later_runs_ignored.decision == "reject" and evidence(later_runs_ignored)["ignored_runs"] == 1


def test_followup_rejects_ties_missing_baseline_and_harm():
    runs = [run("a", 0.5), run("b", 0.5), run("c", 0.5)]
    tie = followup_gate(runs, [run("x", 0.5)], RULE, **ANCHOR)
    assert tie.decision == "reject" and "not improved" in tie.reason
    no_baseline = followup_gate(runs, [], RULE, **ANCHOR)
    assert no_baseline.decision == "reject" and "no baseline runs" in no_baseline.reason
    rule = ReplayRule(primary="success", lower_is_better=("cost",), tolerance=0.5)
    baseline = [run("x", 0.0, cost=1.0), run("y", 0.0, cost=2.0)]
    at_tolerance = [run("a", 1.0, cost=2.0), run("b", 1.0, cost=2.5), run("c", 1.0, cost=1.0)]
    assert followup_gate(at_tolerance, baseline, rule, **ANCHOR).decision == "accept"
    harmful = [run("a", 1.0, cost=1.0), run("b", 1.0, cost=2.5 + 1e-9), run("c", 1.0, cost=1.0)]
    out = followup_gate(harmful, baseline, rule, **ANCHOR)
    assert out.decision == "reject" and out.regressed_cases == ["b"]
    assert evidence(out)["harmful_runs"] == [{"case_id": "b", "metrics": ["cost"]}]


def test_followup_rejects_a_mean_drop_on_another_metric():
    baseline = [run("x", 0.0, completion=0.9), run("y", 0.0, completion=0.2)]
    out = followup_gate([run(c, 1.0, completion=0.2) for c in "abc"], baseline, RULE, **ANCHOR)
    assert out.decision == "reject" and evidence(out)["regressed_metrics"] == ["completion"]
    with pytest.raises(ValueError, match="different metrics"):
        followup_gate([run("a", 1.0)], [run("x", 0.0, completion=0.2)], RULE, **ANCHOR)


def test_outcomes_fit_the_row_and_sql_finds_broken_protected_cases():
    outcomes = {
        "r1": paired_replay_gate([case("t1", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 0.0),
                                  case("p2", "protected", 1.0, 0.0)], RULE, **ANCHOR),
        "r2": paired_replay_gate([case("t2", "trigger", 0.0, 0.0), case("p3", "protected", 1.0, 0.0)], RULE, **ANCHOR),
        "r3": paired_replay_gate([case("t3", "trigger", 0.0, 1.0), case("p1", "protected", 1.0, 1.0)], RULE, **ANCHOR),
        "r4": followup_gate([run(c, 1.0) for c in "abc"], [run("x", 0.0)], RULE, **ANCHOR),
    }
    rows = [GateDecisionRow(run_id="run", decision_id=f"d-{k}", round=0, candidate_id=k, gate="self_healing_replay",
                            baseline_id=None, scorer_version="v1", **vars(o)) for k, o in outcomes.items()]
    con = duckdb.connect()
    con.execute("CREATE TABLE gate_decisions (candidate_id VARCHAR, decision VARCHAR, evidence_json VARCHAR)")
    con.executemany("INSERT INTO gate_decisions VALUES (?, ?, ?)", [(r.candidate_id, r.decision, r.evidence_json)
                                                                     for r in rows])
    broken = con.execute("""
        SELECT candidate_id, unnest(json_extract_string(evidence_json, '$.broken_protected_cases[*]')) AS case_id
        FROM gate_decisions WHERE decision = 'reject' ORDER BY ALL""").fetchall()
    assert broken == [("r1", "p1"), ("r1", "p2"), ("r2", "p3")]
    share = con.execute("""
        SELECT avg(CAST(CAST(json_extract(evidence_json, '$.fixed_trigger') AS BOOLEAN)
                        AND CAST(json_extract(evidence_json, '$.broke_protected') AS BOOLEAN) AS INTEGER))
        FROM gate_decisions
        WHERE decision = 'reject' AND json_extract_string(evidence_json, '$.path') = 'replay'""").fetchone()[0]
    assert share == pytest.approx(0.5)
