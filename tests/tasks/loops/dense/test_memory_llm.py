"""The memory gate and the method comparison on hand-computed trials, and the feedback
LLM's answer checks (no endpoint: the parsing is pure)."""

import json
import math

import pytest

from tasks.loops.dense.llm import prompt, validated_tree
from tasks.loops.dense.memory import Trial, compare, memory_verdict, per_task


def trials(*rows):
    return [Trial(r, p, c) for r, (p, c) in enumerate(rows)]


def test_a_memory_is_admitted_only_when_its_retries_beat_the_current_one():
    better = memory_verdict(trials((True, 5), (True, 4), (False, 3)), trials((False, 2), (True, 4), (False, 3)), False)
    assert (better.decision, better.delta_pass, better.delta_calls) == ("accept", pytest.approx(1 / 3), 1.0)
    cheaper = memory_verdict(trials((True, 3), (False, 2)), trials((True, 4), (False, 2)), False)
    assert (cheaper.decision, cheaper.delta_pass, cheaper.delta_calls) == ("accept", 0.0, -0.5)
    same = memory_verdict(trials((True, 3)), trials((True, 3)), False)
    assert same.decision == "reject" and same.reason.startswith("reject: not better")
    identical = memory_verdict(trials((True, 1)), trials((False, 9)), True)
    assert identical.decision == "reject" and "same content id" in identical.reason
    with pytest.raises(ValueError, match="pair on the same repeats"):
        memory_verdict(trials((True, 1)), trials((True, 1), (True, 1)), False)


def test_methods_are_compared_per_task_mean_over_repeats_paired_with_none():
    rows = [("none", "a", 0, 4), ("none", "a", 1, 2), ("none", "b", 0, 3), ("none", "b", 0, 3),
            ("tree", "a", 1, 2), ("tree", "a", 1, 2), ("tree", "b", 1, 5), ("tree", "b", 0, 5)]
    means = per_task(rows)
    assert means["none"] == {"a": (0.5, 3.0), "b": (0.0, 3.0)}
    assert means["tree"] == {"a": (1.0, 2.0), "b": (0.5, 5.0)}
    c = compare(means, "tree", resamples=500)
    assert (c.tasks, c.delta_pass, c.delta_calls) == (("a", "b"), 0.5, 0.5)
    assert (c.ci_low, c.ci_high) == (0.5, 0.5)  # both tasks differ by exactly +0.5
    assert c.improved == ("a", "b") and c.regressed == () and (c.method_pass, c.baseline_pass) == (0.75, 0.25)
    empty = compare({"none": {}, "tree": {}}, "tree")
    assert empty.tasks == () and math.isnan(empty.delta_pass)


def test_the_llm_tree_must_name_one_node_per_plan_step():
    answer = {"root": {"status": "open", "open_issues": ["refund_order: precondition_failed"]}, "nodes": [
        {"node": "s0", "subgoal": "call get_order", "status": "completed"},
        {"node": "s1", "subgoal": "call refund_order", "status": "open", "issues": [
            {"kind": "tool_call", "name": "refund_order", "code": "precondition_failed", "message": "m",
             "closed": False}]}]}
    tree = validated_tree("```json\n" + json.dumps(answer) + "\n```", "refund_unshipped_order")
    assert tree["method"] == "tree" and tree["nodes"] == answer["nodes"]
    with pytest.raises(ValueError, match="expected 2 nodes"):
        validated_tree(json.dumps({"nodes": answer["nodes"][:1]}), "refund_unshipped_order")
    wrong = {**answer, "nodes": [answer["nodes"][0], {**answer["nodes"][1], "status": "done"}]}
    with pytest.raises(ValueError, match=r"nodes\[1\]"):
        validated_tree(json.dumps(wrong), "refund_unshipped_order")
    with pytest.raises(ValueError):
        validated_tree("not json", "refund_unshipped_order")


def test_the_prompt_lists_the_plan_and_the_trajectory():
    steps = [{"step": 0, "kind": "tool_call", "name": "get_order", "ok": True, "args_json": "{}",
              "result_json": "{}"}]
    text = prompt("refund_unshipped_order", steps)
    assert "s0: call get_order\ns1: call refund_order" in text and "0 tool_call get_order ok=True" in text
    assert "{template}" not in text and "Request template: refund_unshipped_order" in text


class _Episode:
    steps = ()


CASE = ("refund_unshipped_order/001", "select", {"template": "refund_unshipped_order"})


def test_an_issue_that_is_no_object_is_the_documents_llm_error(chat_endpoint):
    """The checks' TypeError on this answer is recorded on the document, never raised."""
    from schemas.configs import EvolveConfig
    from suites.base import Case
    from tasks.loops.dense.llm import llm_writer

    chat_endpoint.answers.append('{"nodes": [{"node": "s0", "status": "open", "issues": [3]}, '
                                 '{"node": "s1", "status": "open"}]}')
    document = llm_writer(EvolveConfig())("tree", Case(*CASE), _Episode())
    assert document["nodes"] == [] and "not iterable" in document["llm_error"]


def test_a_call_with_no_answer_is_the_documents_llm_error(gone_endpoint):
    from schemas.configs import EvolveConfig
    from suites.base import Case
    from tasks.loops.dense.llm import llm_writer

    document = llm_writer(EvolveConfig(llm_timeout_s=5))("tree", Case(*CASE), _Episode())
    assert document["nodes"] == [] and document["llm_error"].startswith("could not get an answer")
