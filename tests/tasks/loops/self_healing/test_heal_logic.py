"""Pure logic of the self_healing loop: candidate programs, replay plans, the gate paths."""

import json
import random

import pytest

from schemas.ids import content_id
from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.library_guard import guard_retire
from tasks.harness_loops.documents import harness_source, proposal_json, proposal_of, rule_text
from tasks.loops.self_healing.heal import propose_new
from tasks.loops.self_healing.heal_logic import (
    ablations,
    accept_all,
    admissions_since_guard,
    decide,
    member_target,
    replay_plan,
)
from tasks.proposers.rules import RuleProposal

DOCUMENT = {"version": 1, "skills": [], "rules": [
    {"id": "retry", "trigger": {"on_error": "transient_unavailable", "tool": "*"}, "action": {"retry": {"max": 2}}}]}


def metrics(success, progress=None, cost=0.0):
    return {"success": success, "progress": success if progress is None else progress, "cost": cost,
            "tool_calls": 3.0}


def test_harness_source_defines_harness_returning_the_document():
    namespace = {}
    exec(harness_source(DOCUMENT), namespace)
    assert namespace["harness"]() == DOCUMENT
    reordered = {"rules": DOCUMENT["rules"], "skills": [], "version": 1}
    assert content_id(harness_source(reordered)) == content_id(harness_source(DOCUMENT))


def test_a_proposal_survives_its_blob_and_its_rule_text_names_the_rule():
    proposal = RuleProposal(DOCUMENT, ("a/000",), "why", "retry_on_error", "k1", "retry", 1)
    assert proposal_of(proposal_json(proposal)) == proposal
    text = json.loads(rule_text(proposal))
    assert text["rule"] == DOCUMENT["rules"][0] and text["index_keys"] == ["retry_on_error", "a"]


def test_replay_plan_takes_failing_triggers_and_passing_protected_cases():
    champion = {"a/000": metrics(0.0), "a/005": metrics(0.0), "b/000": metrics(1.0), "c/000": metrics(1.0),
                "d/000": metrics(1.0)}
    triggers, protected, followup = replay_plan(("a/000", "a/005", "b/000", "zz/000"), champion, ["s/1"], "salt")
    assert set(triggers) == {"a/000", "a/005"} and len(protected) == 2
    assert set(protected) <= {"b/000", "c/000", "d/000"} and followup == ()


def test_without_a_trigger_the_follow_up_path_decides_from_three_unpaired_runs():
    champion = {"a/000": metrics(0.0), "b/000": metrics(1.0)}
    plan = replay_plan(("b/000",), champion, ["s/1", "s/2", "s/3", "s/4"], "salt")
    assert plan[:2] == ((), ()) and len(plan[2]) == 3
    after = {case: metrics(1.0) for case in plan[2]}
    outcome = decide(plan, champion, after, scorer_versions={"v"}, anchored="v", salt="salt", seed=0)
    evidence = json.loads(outcome.evidence_json)
    assert evidence["path"] == "followup" and evidence["weaker_evidence"] is True
    assert outcome.decision == "accept"


def test_a_rule_that_fixes_its_trigger_but_breaks_a_protected_case_is_rejected():
    before = {"t/0": metrics(0.0, 0.5, 2.0), "p/0": metrics(1.0), "p/1": metrics(1.0)}
    after = {"t/0": metrics(1.0), "p/0": metrics(0.0, 0.5, 2.0), "p/1": metrics(1.0)}
    outcome = decide((("t/0",), ("p/0", "p/1"), ()), before, after, scorer_versions={"v"}, anchored="v",
                     salt="s", seed=0)
    evidence = json.loads(outcome.evidence_json)
    assert outcome.decision == "reject" and evidence["fixed_trigger"] and evidence["broke_protected"]
    assert "tool_calls" not in evidence["cases"][0]["before"]


def test_no_failure_evidence_means_no_proposal():
    assert propose_new([], [], DOCUMENT, set(), random.Random(0)) is None


def test_each_rule_and_skill_is_a_guard_member_and_its_ablation_lacks_only_it():
    document = {"version": 1, "rules": [{"id": "a"}, {"id": "b"}], "skills": [{"name": "s", "steps": []}]}
    without = ablations(document)
    assert sorted(without) == ["rule:a", "rule:b", "skill:s"]
    assert without["rule:a"] == {"version": 1, "rules": [{"id": "b"}], "skills": [{"name": "s", "steps": []}]}
    assert without["skill:s"]["skills"] == [] and without["skill:s"]["rules"] == document["rules"]
    assert [member_target(m) for m in sorted(without)] == ["a", "b", "s"]


def test_the_guard_retires_the_member_whose_removal_helps_most_from_hand_built_ablations():
    # full set: 2 of 3 cases. Without rule:a it loses c2 (-1/3: hurts), without rule:b
    # nothing changes (0: free), without skill:s c3 is also served (+1/3: helps most).
    full = {"c1": 1.0, "c2": 1.0, "c3": 0.0}
    without = {"rule:a": {"c1": 1.0, "c2": 0.0, "c3": 0.0}, "rule:b": dict(full),
               "skill:s": {"c1": 1.0, "c2": 1.0, "c3": 1.0}}
    result = guard_retire(full, without, scorer_versions={"v"}, anchored="v")
    assert result.retire == "skill:s" and result.outcome.decision == "reject"
    assert result.outcome.delta == pytest.approx(1 / 3) and result.outcome.improved_cases == ["c3"]
    assert json.loads(result.outcome.evidence_json)["retirable"] == ["skill:s", "rule:b"]
    # after retiring skill:s (its ablation is the new full set), rule:b is still free
    second = guard_retire(without["skill:s"], {"rule:a": {"c1": 1.0, "c2": 0.0, "c3": 1.0},
                                                "rule:b": without["skill:s"]}, scorer_versions={"v"}, anchored="v")
    assert second.retire == "rule:b" and second.outcome.delta == 0.0


def decision(round_index, gate, verdict="accept"):
    return GateDecisionRow(
        run_id="r", decision_id=f"{gate}-{round_index}", round=round_index, candidate_id="c", gate=gate,
        baseline_id=None, decision=verdict, reason="", improved_cases=[], regressed_cases=[], select_score=None,
        baseline_score=None, delta=None, ci_low=None, ci_high=None, n_cases=0, scorer_version="v", evidence_json="{}")


def test_admissions_are_counted_from_the_last_earlier_guard():
    rows = [decision(0, "seed"), decision(1, "paired_replay"), decision(2, "paired_replay", "reject"),
            decision(3, "accept_all"), decision(3, "library_guard", "reject"), decision(3, "library_guard"),
            decision(4, "paired_replay"), decision(5, "paired_replay")]
    assert admissions_since_guard(rows, 3) == 2  # rounds 1 and 3; the guard of round 3 itself is not "earlier"
    assert admissions_since_guard(rows, 4) == 1  # after round 3's guard: round 4 only
    assert admissions_since_guard(rows, 5) == 2
    assert admissions_since_guard(rows, 0) == 0  # the seed's admission is not a rule


def test_accept_all_admits_and_records_what_the_gate_would_have_decided():
    rejected = GateOutcome("reject", "reject: broke protected b/000", [], ["b/000"], 0.5, 1.0, -0.5, None, None, 5,
                           json.dumps({"gate": "paired_replay", "path": "replay", "broke_protected": True}))
    admitted = accept_all(rejected)
    assert admitted.decision == "accept" and admitted.reason.startswith("accept_all ablation")
    assert "would reject" in admitted.reason and admitted.regressed_cases == ["b/000"] and admitted.delta == -0.5
    assert json.loads(admitted.evidence_json) == {"gate": "accept_all", "path": "replay", "broke_protected": True,
                                                  "replay_decision": "reject"}
