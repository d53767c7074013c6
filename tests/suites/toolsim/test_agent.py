import json

from schemas.rows import StepRow
from suites.toolsim.agent import Agent
from suites.toolsim.harness import load_harness

BARE = load_harness({"version": 1})


def _rule(trigger, action):
    return {"trigger": trigger, "action": action}


def _run(backend, doc, template, request, max_steps=40):
    agent = Agent(backend, load_harness(doc) if isinstance(doc, dict) else doc, max_steps)
    status = agent.run(template, request)
    return status, agent.steps


def _calls(steps):
    return [(s["name"], s["ok"]) for s in steps if s["kind"] == "tool_call"]


def test_default_plan_reads_page_1_only_and_cancels_the_wrong_order(backend):
    status, steps = _run(backend, BARE, "cancel_latest_order", {"email": "ada.park@example.com"})
    assert status == "completed"
    assert _calls(steps) == [("find_user_by_email", True), ("list_orders", True), ("cancel_order", True)]
    assert backend.world.orders["o0005"].status == "cancelled"  # latest of page 1, not o0007
    assert backend.world.orders["o0007"].status == "placed"


def test_paginate_rule_reads_every_page(backend):
    doc = {"version": 1, "rules": [_rule({"before": "list_orders"}, {"paginate": {"max_pages": 5}})]}
    _run(backend, doc, "cancel_latest_order", {"email": "ada.park@example.com"})
    assert backend.world.orders["o0007"].status == "cancelled"
    assert backend.world.orders["o0005"].status == "placed"


def test_retry_without_backoff_cannot_beat_a_rate_limit(scripted):
    events = {("apply_coupon", "o0003", 0): "rate_limited"}
    eager = scripted(events)
    doc = {"version": 1, "rules": [_rule({"on_error": "rate_limited"}, {"retry": {"max": 2}})]}
    assert _run(eager, doc, "apply_coupon", {"order_id": "o0003", "code": "SAVE10"})[0] == "gave_up"
    patient = scripted(events)
    doc = {"version": 1, "rules": [_rule({"on_error": "rate_limited"}, {"retry": {"max": 1, "backoff": 2}})]}
    status, steps = _run(patient, doc, "apply_coupon", {"order_id": "o0003", "code": "SAVE10"})
    assert status == "completed"
    assert [s["kind"] for s in steps] == ["tool_call", "wait", "tool_call"]
    assert patient.world.orders["o0003"].coupon == "SAVE10"


def test_switch_tool_finds_a_customer_by_alias(backend):
    doc = {"version": 1, "rules": [_rule({"on_error": "not_found", "tool": "find_user_by_email"},
                                         {"switch_tool": {"tool": "search_users", "args": {"query": "$email"}}})]}
    _run(backend, doc, "open_ticket", {"email": "ada7@mail.test", "subject": "Late"})
    assert [t.user_id for t in backend.world.tickets.values()] == ["u01"]


def test_call_first_on_error_cancels_then_refunds(backend):
    doc = {"version": 1, "rules": [_rule({"on_error": "precondition_failed", "tool": "refund_order"},
                                         {"call_first": {"tool": "cancel_order", "args": {"reason": "asked"}}})]}
    status, steps = _run(backend, doc, "refund_unshipped_order", {"order_id": "o0003"})
    assert status == "completed"
    assert _calls(steps) == [("get_order", True), ("refund_order", False), ("cancel_order", True),
                             ("refund_order", True)]
    assert backend.world.refunded("o0003") == 1000


def test_call_first_before_a_tool(backend):
    doc = {"version": 1, "rules": [_rule({"before": "refund_order"},
                                         {"call_first": {"tool": "cancel_order", "args": {"reason": "asked"}}})]}
    _, steps = _run(backend, doc, "refund_unshipped_order", {"order_id": "o0003"})
    assert _calls(steps) == [("get_order", True), ("cancel_order", True), ("refund_order", True)]


def test_then_call_fires_only_when_its_condition_holds(backend):
    doc = {"version": 1, "rules": [_rule({"after": "create_ticket", "when": {"var": "tier", "equals": "vip"}},
                                         {"then_call": {"tool": "escalate_ticket"}})]}
    _run(backend, doc, "open_ticket", {"email": "bo.lund@example.com", "subject": "Late"})
    _run(backend, doc, "open_ticket", {"email": "ada.park@example.com", "subject": "Late"})
    assert {t.user_id: t.status for t in backend.world.tickets.values()} == {"u02": "escalated", "u01": "open"}


def test_on_result_rule_rereads_a_stale_order(scripted):
    events = {("get_order", "o0002", 0): "stale"}
    naive = scripted(events)
    _run(naive, BARE, "order_status_message", {"order_id": "o0002"})
    assert naive.world.messages[-1].text == "Your order o0002 is placed."
    careful = scripted(events)
    doc = {"version": 1, "rules": [_rule({"on_result": "get_order", "field": "stale", "equals": True},
                                         {"retry": {"max": 1}})]}
    _run(careful, doc, "order_status_message", {"order_id": "o0002"})
    assert careful.world.messages[-1].text == "Your order o0002 is shipped."


def test_skill_with_pick_when_and_checks(backend):
    doc = {"version": 1, "skills": [{
        "name": "restock-check-then-reserve",
        "trigger": {"template": "reserve_stock"},
        "steps": [
            {"call": "find_user_by_email"},
            {"call": "search_products", "args": {"query": "$product_name"}},
            {"pick": {"from": "products", "where": {"name": "$product_name"}, "take": "first"}},
            {"call": "check_inventory"},
            {"call": "reserve_item", "when": {"var": "available", "gte": "$qty"}},
            {"call": "create_ticket", "args": {"subject": "backorder", "product_id": "$product_id"},
             "when": {"var": "available", "lt": "$qty"}},
        ],
        "checks": [{"call": "get_user", "expect": {"tier": "standard"}}],
    }]}
    status, steps = _run(backend, doc, "reserve_stock", {"email": "ada.park@example.com",
                                                         "product_name": "Wool Scarf", "qty": 1})
    assert status == "completed"
    assert [t.product_id for t in backend.world.tickets.values()] == ["p02"]
    assert not backend.world.reservations
    assert steps[-1]["kind"] == "check" and steps[-1]["ok"]


def test_a_failed_check_reruns_the_skill_up_to_retries(backend):
    doc = {"version": 1, "skills": [{
        "name": "s", "trigger": {"template": "apply_coupon"}, "retries": 2,
        "steps": [{"call": "get_order"}],
        "checks": [{"call": "get_order", "expect": {"status": "cancelled"}}],
    }]}
    status, steps = _run(backend, doc, "apply_coupon", {"order_id": "o0003", "code": "SAVE10"})
    assert status == "gave_up"
    assert [s["kind"] for s in steps].count("check") == 3


def test_unbound_variables_fail_the_step_without_reaching_the_backend(backend):
    doc = {"version": 1, "skills": [{"name": "s", "trigger": {"template": "apply_coupon"},
                                     "steps": [{"call": "get_order", "args": {"order_id": "$nope"}}]}]}
    status, steps = _run(backend, doc, "apply_coupon", {"order_id": "o0003", "code": "SAVE10"})
    assert status == "gave_up"
    assert json.loads(steps[0]["result_json"])["error"]["code"] == "unbound_variable"
    assert backend.clock == 0


def test_step_limit_ends_any_episode(backend):
    doc = {"version": 1, "skills": [{"name": "loop", "trigger": {"template": "apply_coupon"}, "retries": 3,
                                     "steps": [{"call": "get_order"}] * 40}]}
    status, steps = _run(backend, doc, "apply_coupon", {"order_id": "o0003", "code": "SAVE10"}, max_steps=25)
    assert status == "step_limit" and len(steps) == 25


def test_retries_are_bounded_per_call(scripted):
    doc = {"version": 1, "rules": [_rule({"on_error": "transient_unavailable"}, {"retry": {"max": 3}})]}
    backend = scripted({("apply_coupon", "o0003", k): "transient" for k in range(10)})
    status, steps = _run(backend, doc, "apply_coupon", {"order_id": "o0003", "code": "SAVE10"})
    assert status == "gave_up" and len(steps) == 4  # the call and its 3 retries


def test_trajectory_steps_are_step_rows(backend):
    _, steps = _run(backend, BARE, "cancel_latest_order", {"email": "ada.park@example.com"})
    rows = [StepRow(run_id="r", execution_id="e", **step) for step in steps]
    assert [r.step for r in rows] == list(range(len(rows)))
    assert {r.kind for r in rows} == {"tool_call", "pick"}
    assert all(r.reward is None for r in rows)
    first = json.loads(rows[0].result_json)["result"]
    assert first["user_id"] == "u01" and json.loads(rows[0].args_json) == {"email": "ada.park@example.com"}


def test_every_step_names_the_rule_or_skill_that_caused_it(scripted):
    backend = scripted({("find_user_by_email", "ada.park@example.com", 0): "rate_limited"})
    doc = {"version": 1, "rules": [
        {"id": "wait-out", "trigger": {"on_error": "rate_limited"}, "action": {"retry": {"max": 1, "backoff": 2}}},
        {"id": "pages", "trigger": {"before": "list_orders"}, "action": {"paginate": {}}},
    ]}
    _, steps = _run(backend, doc, "cancel_latest_order", {"email": "ada.park@example.com"})
    via = [(s["kind"], s["name"], json.loads(s["result_json"])["via"]) for s in steps]
    assert via == [
        ("tool_call", "find_user_by_email", "default:cancel_latest_order"),
        ("wait", "wait", "wait-out"),
        ("tool_call", "find_user_by_email", "wait-out"),
        ("tool_call", "list_orders", "default:cancel_latest_order"),
        ("tool_call", "list_orders", "pages"),
        ("pick", "orders", "default:cancel_latest_order"),
        ("tool_call", "cancel_order", "default:cancel_latest_order"),
    ]
