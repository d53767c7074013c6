"""FORGE's failure modes on hand-built trajectories: the signature, clustering across
instances and templates, idempotent abstraction, the memory's content id."""

import json

from schemas.ids import content_id
from tasks.loops.forge.modes import abstract, describe, memory_bytes, memory_of, mode_id, ranked, signature
from tasks.proposers.rule_evidence import Trace


def step(name, ok, error=None, index=0):
    result = {"error": error} if error else {"result": {}}
    return {"step": index, "kind": "tool_call", "name": name, "args_json": "{}", "result_json": json.dumps(result),
            "ok": ok}


def trace(case_id, template, steps, success=False, unmet=(), broken=()):
    return Trace(case_id, template, tuple(steps), success, {}, tuple(unmet), tuple(broken))


INJECTED = {"code": "transient_unavailable", "message": "x", "injected": True}


def test_signature_of_each_kind_of_failure():
    assert signature(trace("a", "t", [step("get_order", True)], success=True)) is None
    assert signature(trace("a", "t", [step("list_orders", True), step("cancel_order", False, INJECTED, 1)],
                           unmet=["latest_cancelled"])) == ("cancel_order", "injected", "transient_unavailable",
                                                             "latest_cancelled")
    real = {"code": "precondition_failed", "message": "x", "injected": False}
    assert signature(trace("a", "t", [step("refund_order", False, real)], unmet=["order_cancelled", "refunded"])) \
        == ("refund_order", "error", "precondition_failed", "order_cancelled")
    assert signature(trace("a", "t", [step("refund_item", True)], unmet=["item_refunded"],
                           broken=["no_over_refund"])) == ("plan", "ended", "broken:no_over_refund", "item_refunded")


def test_one_mode_clusters_instances_and_templates_and_abstraction_is_idempotent():
    a = trace("cancel_latest_order/000", "cancel_latest_order", [step("find_user_by_email", False, INJECTED)],
              unmet=["latest_cancelled"])
    b = trace("cancel_latest_order/005", "cancel_latest_order", [step("find_user_by_email", False, INJECTED)],
              unmet=["latest_cancelled"])
    c = trace("open_ticket/000", "open_ticket", [step("find_user_by_email", False, INJECTED)],
              unmet=["latest_cancelled"])
    other = trace("x/000", "apply_coupon", [step("apply_coupon", True)], unmet=["coupon_applied"])
    memory = abstract({}, [("t1", a), ("t2", b), ("t3", c), ("t4", other)])
    assert len(memory) == 2
    mode = memory[mode_id(("find_user_by_email", "injected", "transient_unavailable", "latest_cancelled"))]
    assert mode.support == ("t1", "t2", "t3") and mode.templates == ("cancel_latest_order", "open_ticket")
    assert abstract(memory, [("t1", a)]) == memory
    assert [m.support for m in ranked(memory, 1)] == [("t1", "t2", "t3")]
    blob = memory_bytes(memory)
    assert memory_of(blob) == memory and content_id(blob) == content_id(memory_bytes(memory_of(blob)))


def test_descriptions_name_the_tool_the_error_and_the_missing_action():
    assert describe(("list_orders", "injected", "rate_limited", "latest_cancelled")) == \
        "list_orders ends the episode with an injected rate_limited fault; missing: latest_cancelled"
    assert describe(("plan", "ended", "none", "escalated_for_vip")) == "the plan ends; missing: escalated_for_vip"
