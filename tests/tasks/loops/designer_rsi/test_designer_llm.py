"""The designer_rsi skill writer behind `proposer: llm`: what the endpoint is told, how
an answer's edit is named, and the stop when no endpoint is configured."""

import random

import pytest

from schemas.configs import EvolveConfig
from tasks.harness_loops.llm_edit import NoLLMEdit
from tasks.loops.designer_rsi.designer_llm import brief, edited_target, llm_design, require_endpoint
from tasks.loops.designer_rsi.designer_logic import DEEPEN, EXPAND, PoolRecord
from tasks.proposers import ProposerUnavailable
from tasks.proposers.rule_evidence import Evidence, Trace

GAP = PoolRecord(EXPAND, "refund|unmet:item_refunded", 0, ("refund/1", "refund/2", "refund/3"), ("a", "b", "c"))


def test_the_brief_names_the_subject_the_failures_and_the_successes():
    failing = Trace("refund/1", "refund", (), False, unmet=("item_refunded",))
    text = brief(GAP, Evidence((failing,), (Trace("refund/9", "refund", (), True),)))
    assert "template refund completed" in text and "3 so far" in text
    assert "- refund/1: unmet ['item_refunded']" in text and "- refund/9" in text
    item = PoolRecord(DEEPEN, "item:retry-1", 0, ("a/1", "a/2"), ("x", "y"))
    assert "The library item retry-1 made the step" in brief(item, Evidence(()))


def test_edited_target_names_the_added_changed_or_removed_item():
    base = {"rules": [{"id": "r1", "x": 1}], "skills": []}
    assert edited_target(base, base) is None
    assert edited_target(base, {"rules": [{"id": "r1", "x": 2}], "skills": []}) == "r1"
    assert edited_target(base, {"rules": [], "skills": []}) == "r1"
    assert edited_target(base, {**base, "skills": [{"name": "s", "trigger": {"template": "t"}}]}) == "s"


def test_without_an_endpoint_the_run_is_told_how_to_configure_one(monkeypatch):
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("RATCHET_LLM_MODEL", raising=False)
    evidence = {GAP.signature: Evidence(())}
    with pytest.raises(ProposerUnavailable, match="RATCHET_LLM_BASE_URL"):
        require_endpoint(EvolveConfig())
    with pytest.raises(ProposerUnavailable, match="RATCHET_LLM_BASE_URL"):
        llm_design([GAP], evidence, "c0", "def harness():\n    return {}\n", {}, EvolveConfig(), random.Random(0))
    with pytest.raises(NoLLMEdit, match="^no pool record reached its threshold$"):
        llm_design([], {}, "c0", "", {}, EvolveConfig(), random.Random(0))
