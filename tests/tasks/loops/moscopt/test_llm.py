"""The llm path's parts that need no model: the brief names the failing episodes, the
rejections and the experience; an answered harness document becomes a skill."""

from suites.toolsim.harness import parse_harness
from tasks.loops.moscopt.edits import Failure, Memory
from tasks.loops.moscopt.llm import as_document, bundle_of, skill_brief
from tasks.loops.moscopt.pool import bundle_id

RULE = {"id": "r1", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}


def test_brief_shows_failures_rejections_and_experience():
    text = skill_brief([Failure("apply_coupon/001", "apply_coupon", ("x",))],
                       Memory({"a", "b"}, {"promote": 0.65}))
    assert "- apply_coupon/001 (apply_coupon)" in text and "2 edits" in text and "- promote: 0.65" in text


def test_an_answer_document_becomes_a_skill_with_the_targets_name():
    skill = bundle_of({"version": 1, "rules": [RULE], "skills": []}, "retry")
    assert skill["name"] == "retry" and skill["summary"] == "retry: r1"
    parse_harness(as_document(skill))
    assert bundle_id(skill) == bundle_id(bundle_of(as_document(skill), "retry"))


def test_an_answer_cut_off_is_no_edit_the_operators_propose_and_it_is_kept(chat_endpoint):
    """The real 0.5B model's stage-1 answer opened a REPLACE marker and was cut off at 192
    tokens; the round's edit is the operators' and the answer is kept with its call."""
    import random

    from schemas.configs import EvolveConfig
    from tasks.loops.moscopt.edits import Failure, Memory
    from tasks.loops.moscopt.llm import LLMProposer
    from tasks.loops.moscopt.pool import State, bundle_id, summarised

    rule = {"id": "r1", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
    skill = summarised({"name": "a", "summary": "", "rules": [rule], "skills": []})
    answer = "<<<<<<< REPLACE\ndef load_failing_episodes():\n    return [{'case_id': 'cancel_latest_order/000',"
    chat_endpoint.answers.append(answer)
    proposer = LLMProposer(EvolveConfig())
    edit = proposer(1, State.of([skill]), Memory(), [Failure("t/0", "t", (bundle_id(skill),))],
                    {"rules": [rule], "plans": []}, {}, 1, 8, random.Random(0))
    assert edit is not None and edit.operator != "llm_edit" and proposer.unusable == 1 and proposer.tokens == 15
    ((target, why),) = proposer.refused
    assert target == bundle_id(skill) and why.proposal.answer == answer
    assert str(why).startswith("the llm's answer is not a valid harness")
