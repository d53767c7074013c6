"""The growing_harness `proposer: llm` patch writer: what the endpoint is told, and that
it refuses to run without an endpoint (no fake answers offline)."""

import random

import pytest

from schemas.configs import EvolveConfig
from tasks.harness_loops.llm_edit import NoLLMEdit
from tasks.loops.growing_harness.grow_llm import brief, llm_patch
from tasks.proposers import ProposerUnavailable
from tasks.proposers.rule_evidence import Trace

STEP = {"kind": "tool_call", "name": "get_order", "args_json": '{"order_id": "o1"}', "ok": False,
        "result_json": '{"error": {"code": "transient_unavailable"}}'}
FAILING = Trace(case_id="cancel_latest_order/003", template="cancel_latest_order", steps=(STEP,), success=False,
                unmet=("order_cancelled",))


def test_the_brief_shows_the_window_traces_and_the_constraints_but_no_task_ids():
    text = brief([FAILING])
    assert "cancel_latest_order: unmet ['order_cancelled']" in text
    assert 'get_order({"order_id": "o1"}) -> {"error": {"code": "transient_unavailable"}}' in text
    assert "never\nhard-code task ids" in text and "cancel_latest_order/003" not in text


def test_no_failures_means_no_patch_and_no_endpoint_means_a_clear_error(monkeypatch):
    document = {"version": 1, "rules": [], "skills": []}
    with pytest.raises(NoLLMEdit, match="^the window holds no failing task: nothing to patch$"):
        llm_patch("h", "def harness():\n    return {}\n", document, [], EvolveConfig(), random.Random(0))
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("RATCHET_LLM_MODEL", raising=False)
    with pytest.raises(ProposerUnavailable, match="RATCHET_LLM_BASE_URL"):
        llm_patch("h", "def harness():\n    return {}\n", document, [FAILING], EvolveConfig(), random.Random(0))
