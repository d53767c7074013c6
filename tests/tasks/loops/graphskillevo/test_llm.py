"""The `proposer: llm` path: what the endpoint is told (prompt files), the skill as a
program and back, no endpoint means a clear error (no fake answers offline), and an
answer that holds no skill or an invalid one is a recorded invalid offspring."""

import random

import pytest

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import literal_document
from tasks.loops.graphskillevo.graph import END, from_harness, seed_skill, skill_id
from tasks.loops.graphskillevo.llm import ENTRYPOINT, CROSSOVER_PROMPT, MUTATE_PROMPT, llm_mutate, skill_program
from tasks.harness_loops.llm_edit import brief
from tasks.loops.graphskillevo.operators import Offspring
from tasks.loops.graphskillevo.stages import skill_row
from tasks.proposers import ProposerUnavailable
from tasks.proposers.rule_evidence import Trace
from tasks.runtime.context import RunRef

STEP = {"kind": "tool_call", "name": "refund_order", "args_json": "{}", "ok": False,
        "result_json": '{"error": {"code": "precondition_failed"}}'}
FAILING = Trace(case_id="refund_unshipped_order/003", template="refund_unshipped_order", steps=(STEP,),
                success=False, unmet=("refunded",))
REF = RunRef(store_uri="/nonexistent", run_id="r")


def test_prompt_files_render_with_the_failures_and_the_second_parent():
    from tasks.loops.graphskillevo.llm import failure_lines

    text = brief(MUTATE_PROMPT, count=1, failures=failure_lines([FAILING]))
    assert "refund_unshipped_order/003 (refund_unshipped_order): unmet ['refunded']" in text
    assert "{id, on, rule}" in text and "precondition_failed" in text
    other = brief(CROSSOVER_PROMPT, score="0.500", other='{"graph": {}}')
    assert "Second parent (val success 0.500):" in other and '{"graph": {}}' in other


def test_the_skill_program_returns_the_skill():
    skill = seed_skill()
    assert literal_document(skill_program(skill), ENTRYPOINT) == skill


def test_no_endpoint_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("RATCHET_LLM_MODEL", raising=False)
    with pytest.raises(ProposerUnavailable, match="RATCHET_LLM_BASE_URL"):
        llm_mutate(seed_skill(), "p", [FAILING], EvolveConfig(), random.Random(0))


def test_an_answer_without_a_skill_and_an_invalid_graph_are_recorded_not_run():
    none = skill_row(REF, 2, Offspring(None, "llm_mutate", ("p",), "llm answer gives no skill: no return"))
    assert not none.valid and none.reason == "llm answer gives no skill: no return" and none.candidate_id is None
    broken = from_harness({"version": 1, "rules": [], "skills": []})
    broken["graph"]["edges"] = [e for e in broken["graph"]["edges"] if e["dst"] != END]
    row = skill_row(REF, 2, Offspring(broken, "llm_crossover", ("a", "b"), "child"))
    assert not row.valid and row.reason.startswith("end is unreachable") and row.skill_id == skill_id(broken)
    good = skill_row(REF, 2, Offspring(seed_skill(), "mutate:x", ("p",), "same as the seed"))
    assert good.valid and good.reason is None and len(good.candidate_id) == 64


def test_two_answers_with_the_same_reason_are_two_rows():
    """The real 0.5B model's answers were cut off the same way twice; each is its own
    invalid offspring (keyed by generation and slot), so neither is dropped as known."""
    why = ("llm answer unusable: the answer has neither SEARCH/REPLACE blocks nor a whole program defining "
           "skill() (cut off at max_tokens=192)")
    rows = [skill_row(REF, gen, Offspring(None, "llm_mutate", ("p",), why), slot=slot)
            for gen, slot in ((1, 0), (1, 1), (2, 0))]
    assert len({r.skill_id for r in rows}) == 3 and all(not r.valid and r.reason == why for r in rows)
