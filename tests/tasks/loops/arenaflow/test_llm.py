import json

from tasks.loops.arenaflow.arena import Trajectory
from tasks.loops.arenaflow.llm import parse_verdict
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
    assert (m.winner, m.key_steps, m.used) == ("a", (1,), {1: ("retry-transient",)})


def test_unusable_verdicts_are_refused():
    for text in ("not json", '{"winner": "C", "key_steps": []}', '{"winner": "A", "key_steps": [0]}',
                 '{"winner": "A", "key_steps": [7]}'):
        assert parse_verdict(text, A, B, 1, ("retry-transient",)) is None  # step 0 is a read
