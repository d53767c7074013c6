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
