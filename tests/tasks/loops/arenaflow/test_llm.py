import json
import re

from tasks.loops.arenaflow.arena import Trajectory
import pytest

from tasks.loops.arenaflow.llm import UnusableVerdict, parse_verdict
from tasks.proposers.llm import load_prompt


def step(name, ok=True, via="default:t"):
    return {"kind": "tool_call", "name": name, "args_json": "{}", "ok": ok,
            "result_json": json.dumps({"result": {}, "via": via})}


A = Trajectory("a", True, 1, (step("get_order"), step("cancel_order", via="retry-transient")))
B = Trajectory("b", False, 0, (step("get_order"),))


def test_prompt_file_asks_for_the_four_outputs():
    text = load_prompt("arenaflow_judge.txt")
    for field in ("winner", "key_steps", "experience", "skill_ids", "$a", "$b", "$skills"):
        assert field in text


def test_usable_verdict_becomes_a_match_with_attribution():
    m = parse_verdict('{"winner": "A", "key_steps": [1], "experience": "x", "skill_ids": []}', A, B, 1,
                      ("retry-transient",))
    assert (m.winner, m.key_steps, m.used, m.judged_by) == ("a", (1,), {1: ("retry-transient",)}, "llm")


def test_unusable_verdicts_are_refused_saying_why():
    for text, why in (("not json", "not JSON"), ('{"winner": "C", "key_steps": []}', "no winner"),
                      ('[1]', "no winner"), ('{"winner": "A", "key_steps": "x"}', "not a list"),
                      ('{"winner": "A", "key_steps": [0]}', "key steps [0] are no state change"),  # a read
                      ('{"winner": "A", "key_steps": [7]}', "key steps [7]")):
        with pytest.raises(UnusableVerdict, match=re.escape(why)):
            parse_verdict(text, A, B, 1, ("retry-transient",))


def test_llm_judge_sees_the_request_and_falls_back_on_a_bad_answer(chat_endpoint):
    from schemas.configs import EvolveConfig
    from tasks.loops.arenaflow.llm import LLMJudge

    chat_endpoint.answers += ['{"winner": "B", "key_steps": []}', "I think A is better"]
    judge = LLMJudge(EvolveConfig())
    m = judge.for_request('{"order_id": "o1"}', "abc: retry")(A, B, 1, ("retry-transient",))
    assert m.winner == "b" and judge.calls == 1 and judge.tokens == 15 and judge.unusable == 0
    assert '{"order_id": "o1"}' in chat_endpoint.prompts[0] and "abc: retry" in chat_endpoint.prompts[0]
    m = judge(A, B, 1, ("retry-transient",))
    assert m.winner == "a" and judge.unusable == 1  # the rule comparator's verdict stands
    assert m.judged_by == "rule (llm answer unusable: the answer is not JSON)"


def test_a_call_with_no_answer_falls_back_to_the_rule_comparator(gone_endpoint):
    from schemas.configs import EvolveConfig
    from tasks.loops.arenaflow.llm import LLMJudge

    judge = LLMJudge(EvolveConfig(llm_timeout_s=5))
    m = judge(A, B, 1, ("retry-transient",))
    assert m.winner == "a" and (judge.calls, judge.tokens, judge.unusable) == (1, 0, 1)
    assert m.judged_by.startswith("rule (llm call failed: could not get an answer from http://127.0.0.1:")
