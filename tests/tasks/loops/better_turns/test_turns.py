"""Per-turn scoring (L1–L3) and the history a policy reads, on hand-built toolsim steps."""

import json

import pytest

from tasks.loops.better_turns.history import State, reference_turns
from tasks.loops.better_turns.turns import (Action, delexicalise, exact, judge_ok, render, resolve, token_f1,
                                            turn_kind)

VARS = {"user_id": "u01", "order_id": "o0027", "status": "shipped", "next_page": 2, "tier": "vip"}


def step(kind, name, args, result=None, error=None):
    body = {"result": result} if error is None else {"error": {"code": error, "message": "", "injected": True}}
    return {"step": 0, "kind": kind, "name": name, "args_json": json.dumps(args), "ok": error is None,
            "result_json": json.dumps({**body, "via": "x"}), "reward": None, "logprob": None, "teacher_logprob": None}


def test_token_f1_counts_shared_words_of_the_rendered_turns():
    pred = render(Action("call", "get_order", {"order_id": "o1"}), {})
    ref = render(Action("call", "get_order", {"order_id": "o2"}), {})
    # call, get, order, order, id, o1 vs ... o2: 5 of 6 tokens shared either way
    assert token_f1(pred, ref) == pytest.approx(5 / 6)
    assert token_f1("a b", "c") == 0.0 and token_f1("", "") == 1.0


def test_values_become_variables_and_come_back():
    assert delexicalise("page", 2, VARS) == "$next_page"
    assert delexicalise("qty", 2, VARS) == 2  # a number only by its own name (or next_<name>)
    assert delexicalise("user_id", "u01", VARS) == "$user_id"
    text = delexicalise("text", "Your order o0027 is shipped.", VARS)
    assert text == "Your order $order_id is $status."
    assert resolve(text, VARS) == "Your order o0027 is shipped."
    with pytest.raises(KeyError):
        resolve("$missing", VARS)
    old, new = {"street": "1 Elm St", "zip": "11111"}, {"street": "2 Oak Ave", "zip": "22222"}
    assert delexicalise("address", new, {"address": old, "new_address": new}) == "$new_address"  # a whole mapping
    assert delexicalise("address", {"street": "9 Way", "zip": "u01"}, VARS) == {"street": "9 Way", "zip": "$user_id"}


def test_exact_and_judge_tell_a_wrong_argument_from_a_wrong_tool():
    ref = Action("call", "send_message", {"text": "Your order $order_id is $status."})
    assert turn_kind(ref) == "text" and turn_kind(Action("call", "get_order")) == "tool"
    near = Action("call", "send_message", {"text": "Your order $order_id is delayed."})
    assert not exact(near, ref, VARS) and judge_ok(near, ref, VARS)  # required user_id bound from the variables
    assert exact(ref, ref, VARS) and judge_ok(ref, ref, VARS)
    assert not judge_ok(Action("call", "get_order"), ref, VARS)
    assert not judge_ok(Action("call", "send_message", {"text": "$nowhere"}), ref, VARS)  # unbound
    off = Action("call", "send_message", {"text": "ok"})
    assert not judge_ok(off, ref, VARS)  # a text turn also needs half the reference's words


def test_state_appends_later_pages_and_counts_errors_in_a_row():
    state = State.start("cancel_latest_order", {"email": "a@x"})
    steps = [step("tool_call", "find_user_by_email", {"email": "a@x"}, {"user_id": "u1", "tier": "vip"}),
             step("tool_call", "list_orders", {"page": 1, "user_id": "u1"}, {"orders": [{"order_id": "o1"}],
                                                                             "next_page": 2}),
             step("tool_call", "list_orders", {"page": 2, "user_id": "u1"}, error="transient_unavailable"),
             step("tool_call", "list_orders", {"page": 2, "user_id": "u1"}, {"orders": [{"order_id": "o2"}],
                                                                             "next_page": None})]
    state.advance(steps[0])
    assert "v:tier=vip" in state.features()
    state.advance(steps[1])
    assert state.outcome == "ok:more"
    assert state.action_of(steps[2]) == Action("call", "list_orders", {"page": "$next_page", "user_id": "$user_id"})
    state.advance(steps[2])
    assert (state.outcome, state.streak) == ("transient_unavailable", 1)
    state.advance(steps[3])
    assert [o["order_id"] for o in state.variables["orders"]] == ["o1", "o2"] and state.streak == 0


def test_reference_turns_end_with_stop_and_hold_the_variables_they_were_taken_with():
    steps = [step("tool_call", "get_order", {"order_id": "o5"}, {"order_id": "o5", "status": "placed"}),
             step("wait", "wait", {"ticks": 2}, {"clock": 2})]
    turns = reference_turns("apply_coupon", {"order_id": "o5"}, steps)
    assert [t.action.kind for t in turns] == ["call", "wait", "stop"]
    assert turns[0].action.args == {"order_id": "$order_id"} and "status" not in turns[0].variables
    assert turns[2].variables["status"] == "placed" and "t|p=apply_coupon|wait:wait" in turns[2].features
    with pytest.raises(ValueError, match="check"):
        reference_turns("apply_coupon", {}, [step("check", "get_order", {}, {})])
