"""The self_healing rule writer behind `proposer: llm`, against a local OpenAI-compatible
stub (the wiring, not a model): an answer is a proposal only if it adds one rule or skill."""

import random

import pytest

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit
from tasks.loops.self_healing.heal_llm import OPERATOR, llm_rule
from tasks.proposers import ProposerUnavailable
from tasks.proposers.rule_evidence import Trace

RETRY = {"id": "retry", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
OTHER = {"id": "retry-503", "trigger": {"on_error": "transient_unavailable", "tool": "*"},
         "action": {"retry": {"max": 2}}}
CHAMPION = {"version": 1, "rules": [RETRY], "skills": []}
TRACES = [Trace("cancel_latest_order/000", "cancel_latest_order", (), False, unmet=("order_cancelled",)),
          Trace("reserve_stock/005", "reserve_stock", (), False, broken=("double_reserve",)),
          Trace("refund_unshipped_order/000", "refund_unshipped_order", (), True)]


@pytest.fixture
def endpoint(chat_endpoint):
    return chat_endpoint.answers, chat_endpoint.prompts


def write(document, endpoint):
    answers, _ = endpoint
    answers.append(f"A rule.\n```python\n{harness_source(document)}```\n")
    return llm_rule("c" * 64, harness_source(CHAMPION), CHAMPION, TRACES, EvolveConfig(), random.Random(0))


def test_an_answer_adding_one_rule_is_a_proposal_triggered_by_the_failures_shown(endpoint):
    proposal, call = write({**CHAMPION, "rules": [RETRY, OTHER]}, endpoint)
    assert call.answer.startswith("A rule.\n```python\n") and proposal.rationale == call.summary
    assert proposal.operator == OPERATOR and proposal.target == "retry-503"
    assert proposal.document["rules"] == [RETRY, OTHER]
    assert proposal.triggers == ("cancel_latest_order/000", "reserve_stock/005") and proposal.support == 2
    prompt = endpoint[1][0]
    assert "cancel_latest_order/000" in prompt and "double_reserve" in prompt
    assert "refund_unshipped_order/000" not in prompt  # only failures are evidence


@pytest.mark.parametrize("document, reason", [
    ({**CHAMPION, "rules": []}, "exactly one"),
    ({**CHAMPION, "rules": [RETRY, OTHER, dict(OTHER, id="x", trigger={"on_error": "rate_limited", "tool": "list_orders"})]},
     "exactly one"),
    ({**CHAMPION, "rules": [dict(RETRY, action={"retry": {"max": 9}})]}, "not a valid harness"),
])
def test_an_answer_that_is_not_one_valid_rule_is_no_proposal(endpoint, document, reason):
    with pytest.raises(NoLLMEdit, match=reason) as raised:
        write(document, endpoint)
    assert raised.value.asked and raised.value.proposal.answer.startswith("A rule.")  # the raw answer, for the record


def test_without_an_endpoint_the_llm_proposer_says_so(monkeypatch):
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("RATCHET_LLM_MODEL", raising=False)
    with pytest.raises(ProposerUnavailable):
        llm_rule("c" * 64, harness_source(CHAMPION), CHAMPION, TRACES, EvolveConfig(), random.Random(0))
