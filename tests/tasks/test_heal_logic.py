"""Pure logic of the self_healing loop: candidate programs, replay plans, the gate paths."""

import json
import random

from schemas.ids import content_id
from tasks.heal import propose_new
from tasks.heal_logic import decide, harness_source, proposal_json, proposal_of, replay_plan, rule_text
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
