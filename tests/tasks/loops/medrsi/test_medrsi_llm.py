"""The medrsi tool builder behind `proposer: llm`, against a local OpenAI-compatible
stub: an answer becomes a tool only if it adds exactly one rule or skill."""

import json
import random

import pytest

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import added_tool, harness_source, literal_document
from tasks.harness_loops.llm_edit import NoLLMEdit
from tasks.loops.medrsi.medrsi_llm import llm_tool
from tasks.loops.medrsi.medrsi_logic import Cluster
from tasks.proposers.rule_evidence import Trace

RETRY = {"id": "retry", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
SKILL = {"name": "s", "trigger": {"template": "cancel_latest_order"}, "steps": [{"call": "list_orders"}]}
STABLE = {"version": 1, "rules": [RETRY], "skills": []}


def test_added_tool_finds_the_one_new_rule_or_skill():
    other = dict(RETRY, id="r2", trigger={"on_error": "transient_unavailable", "tool": "*"})
    assert added_tool(STABLE, {**STABLE, "rules": [RETRY, other]}) == ("add_rule", other)
    assert added_tool(STABLE, {**STABLE, "skills": [SKILL]}) == ("put_skill", SKILL)
    assert added_tool(STABLE, STABLE) is None                                       # nothing added
    assert added_tool(STABLE, {**STABLE, "rules": [other]}) is None                 # a stable rule dropped
    assert added_tool(STABLE, {**STABLE, "rules": [RETRY, other], "skills": [SKILL]}) is None  # two tools


def test_literal_document_reads_without_running():
    assert literal_document(harness_source(STABLE)) == json.loads(json.dumps(STABLE))
    with pytest.raises(ValueError, match="literal"):
        literal_document("def harness():\n    return dict(version=1)\n")


@pytest.fixture
def endpoint(chat_endpoint):
    chat_endpoint.usage = {"prompt_tokens": 120, "completion_tokens": 30}
    return chat_endpoint.answers


def build(answer: str, endpoint: list[str]):
    endpoint.append(answer)
    cluster = Cluster("cancel_latest_order:unmet:order_cancelled", ("cancel_latest_order/000",), 3.0)
    traces = [Trace("cancel_latest_order/000", "cancel_latest_order", (), False, unmet=("order_cancelled",))]
    return llm_tool("s" * 64, harness_source(STABLE), STABLE, cluster, traces, EvolveConfig(), random.Random(0))


def test_an_answer_adding_one_skill_is_a_tool(endpoint):
    program = harness_source({**STABLE, "skills": [SKILL]})
    edit, item, call = build(f"Add a skill.\n```python\n{program}```\n", endpoint)
    assert (edit, item) == ("put_skill", SKILL) and call.answer == f"Add a skill.\n```python\n{program}```\n"
    assert call.summary.startswith("llm_rewrite by tiny-coder: Add a skill.")
    assert (call.tokens_in, call.tokens_out) == (120, 30) and call.latency_s > 0  # the candidate's columns


@pytest.mark.parametrize("document, reason", [
    ({**STABLE, "rules": []}, "exactly one"),
    ({**STABLE, "rules": [dict(RETRY, action={"retry": {"max": 9}})]}, "not a valid harness"),
])
def test_an_answer_that_is_not_one_valid_tool_builds_none(endpoint, document, reason):
    program = harness_source(document)
    with pytest.raises(NoLLMEdit, match=reason) as raised:
        build(f"```python\n{program}```\n", endpoint)
    assert raised.value.proposal.answer == f"```python\n{program}```\n"
    assert raised.value.proposal.tokens_in == 120  # the failed call, with its cost, for the round's record
