"""LIMBO's arms and memory on hand-built entries: FIFO admission, content ids, what
each mode loads and what it costs."""

import json

from tasks.loops.limbo.memory import (ARMS, SEED, admit, arm_of, context, make_entry, memory_bytes, memory_id,
                                      memory_of, retrieve, similarity, tokens_of)
from schemas.ids import content_id

RULE = {"id": "r1", "trigger": {"on_error": "timeout", "tool": "*"}, "action": {"retry": {"max": 2}}}
STEP = {"kind": "tool_call", "name": "get_order", "ok": True, "args_json": '{"order_id": "o1"}',
        "result_json": '{"result": {}}'}
WAIT = {"kind": "wait", "name": "wait", "ok": True, "args_json": "{}", "result_json": "{}"}


def entry(template, t, rules=(), skills=()):
    return make_entry(template, t, f"x{t}", {"rules": list(rules), "skills": list(skills)}, [STEP, WAIT])


def test_arms_are_modes_times_budgets():
    assert len(ARMS) == 8 and arm_of("retrieval-lean").turns == 1 and arm_of("none-full").tool_calls == 40
    assert [a.id for a in ARMS][:2] == ["none-lean", "none-full"]


def test_tokens_are_characters_over_four_rounded_up():
    assert tokens_of("abcd") == 2  # '"abcd"' is 6 characters
    assert tokens_of([]) == 1


def test_an_entry_keeps_the_ok_tool_calls_and_its_trajectory_tokens():
    e = entry("apply_coupon", 3, [RULE])
    assert e.skeleton == ("get_order",)
    assert e.traj_tokens == tokens_of([STEP["args_json"], STEP["result_json"]]) + tokens_of(["{}", "{}"])
    assert e.entry != entry("apply_coupon", 4, [RULE]).entry  # another trajectory, another id


def test_admission_evicts_the_oldest_past_capacity():
    a, b, c = entry("apply_coupon", 0), entry("open_ticket", 1), entry("reserve_stock", 2)
    memory, evicted = admit([a, b], c, 2)
    assert memory == [b, c] and evicted == [a]
    assert admit([a], b, 2) == ([a, b], [])


def test_a_memory_version_is_the_sha256_of_its_blob_and_round_trips():
    memory = [entry("apply_coupon", 0, [RULE]), entry("open_ticket", 1)]
    assert memory_id(memory) == content_id(memory_bytes(memory))
    assert memory_of(memory_bytes(memory)) == memory


def test_similarity_is_one_for_the_template_and_jaccard_otherwise():
    assert similarity("open_ticket", "open_ticket") == 1.0
    # open_ticket: {find_user_by_email, create_ticket}; reserve_stock: {find_user_by_email, search_products, reserve_item}
    assert similarity("open_ticket", "reserve_stock") == 1 / 4
    assert similarity("apply_coupon", "open_ticket") == 0.0


def test_retrieval_prefers_the_same_template_then_the_newest():
    a, b, c = entry("open_ticket", 0), entry("apply_coupon", 1), entry("open_ticket", 2)
    assert retrieve([a, b, c], "open_ticket", 2) == [c, a]
    assert retrieve([a, b, c], "apply_coupon", 1) == [b]


def test_each_mode_loads_its_context_at_its_cost():
    skill = {"name": "s", "trigger": {"template": "apply_coupon"}, "steps": [{"call": "apply_coupon"}]}
    old, last = entry("open_ticket", 0, [RULE]), entry("apply_coupon", 1, [dict(RULE, id="r2")], [skill])
    memory = [old, last]
    assert context("none", memory, "apply_coupon", 2) == (SEED, 0)
    harness, tokens = context("direct", memory, "apply_coupon", 2)
    assert harness["skills"] == [skill] and len(harness["rules"]) == 1
    assert tokens == tokens_of(last.items) + last.traj_tokens
    harness, tokens = context("compressed", memory, "apply_coupon", 2)
    assert harness["skills"] == [] and tokens == tokens_of({"rules": last.items["rules"]}) + tokens_of(["get_order"])
    harness, tokens = context("retrieval", memory, "apply_coupon", 2)
    # the same rule body under two ids is loaded once
    assert [r["id"] for r in harness["rules"]] == ["r2"] and harness["skills"] == [skill]
    assert tokens == sum(tokens_of(e.items) + e.traj_tokens for e in (last, old))
    assert context("retrieval", [], "apply_coupon", 2) == (SEED, 0)
    json.dumps(harness)
