import pytest

from suites.toolsim.backend import HANDLERS
from suites.toolsim.tools import ERROR_CODES, TOOLS, ToolError

ADDRESS = {"street": "9 Oak Ave", "city": "Fairview", "zip": "54321"}

# (tool, args, code, fragment of the message): at least one typed error per tool.
ERRORS = [
    ("get_user", {"user_id": "u99"}, "not_found", "no user 'u99'"),
    ("get_user", {}, "invalid_argument", "missing required argument 'user_id'"),
    ("find_user_by_email", {"email": "ada7@mail.test"}, "not_found", "primary email"),
    ("find_user_by_email", {"email": ""}, "invalid_argument", "non-empty string"),
    ("search_users", {"query": "nobody"}, "not_found", "no user matches"),
    ("list_orders", {"user_id": "u01", "page": 0}, "invalid_argument", "outside 1..1000"),
    ("list_orders", {"user_id": "u01", "page": "2"}, "invalid_argument", "expected an integer"),
    ("list_orders", {"user_id": "u01", "page": True}, "invalid_argument", "expected an integer"),
    ("get_order", {"order_id": "o0099"}, "not_found", "no order"),
    ("get_order", {"order_id": "o0001", "verbose": True}, "invalid_argument", "unexpected arguments ['verbose']"),
    ("cancel_order", {"order_id": "o0002", "reason": "x"}, "precondition_failed", "is shipped"),
    ("cancel_order", {"order_id": "o0003"}, "invalid_argument", "missing required argument 'reason'"),
    ("refund_order", {"order_id": "o0003", "reason": "x"}, "precondition_failed", "cancelled or delivered"),
    ("refund_order", {"order_id": "o0001", "reason": "x", "product_id": "p02"}, "invalid_argument", "not in order"),
    ("update_address", {"order_id": "o0001", "address": ADDRESS}, "precondition_failed", "is delivered"),
    ("update_address", {"order_id": "o0003", "address": {**ADDRESS, "zip": "1234"}}, "invalid_argument", "5 digits"),
    ("update_address", {"order_id": "o0003", "address": {"street": "x"}}, "invalid_argument", "exactly"),
    ("apply_coupon", {"order_id": "o0003", "code": "FREE100"}, "not_found", "no coupon"),
    ("apply_coupon", {"order_id": "o0001", "code": "SAVE10"}, "precondition_failed", "is delivered"),
    ("get_product", {"product_id": "p99"}, "not_found", "no product"),
    ("search_products", {"query": 7}, "invalid_argument", "non-empty string"),
    ("check_inventory", {"product_id": "p99"}, "not_found", "no product"),
    ("reserve_item", {"user_id": "u01", "product_id": "p02", "qty": 1}, "precondition_failed", "0 available"),
    ("reserve_item", {"user_id": "u01", "product_id": "p01", "qty": 51}, "invalid_argument", "outside 1..50"),
    ("create_ticket", {"user_id": "u01", "subject": "hi", "order_id": "o0099"}, "not_found", "no order"),
    ("escalate_ticket", {"ticket_id": "t0001"}, "not_found", "no ticket"),
    ("send_message", {"user_id": "u01", "text": "x" * 501}, "invalid_argument", "limit is 500"),
    ("delete_everything", {}, "unknown_tool", "no tool"),
]


@pytest.mark.parametrize("tool, args, code, fragment", ERRORS, ids=[f"{e[0]}-{e[2]}" for e in ERRORS])
def test_typed_errors(backend, tool, args, code, fragment):
    with pytest.raises(ToolError) as caught:
        backend.call(tool, args)
    assert caught.value.code == code
    assert fragment in caught.value.message
    assert caught.value.injected is False
    assert code in ERROR_CODES


def test_every_tool_is_covered_and_there_are_at_least_13():
    assert len(TOOLS) >= 13
    assert set(TOOLS) == set(HANDLERS)
    assert set(TOOLS) <= {e[0] for e in ERRORS}


def test_validation_errors_change_nothing_and_draw_no_fault(backend):
    with pytest.raises(ToolError):
        backend.call("cancel_order", {"order_id": "o0003"})
    assert backend.world.orders["o0003"].status == "placed"
    assert backend.events == [] and backend.clock == 0


def test_list_orders_pages_oldest_first(backend):
    first = backend.call("list_orders", {"user_id": "u01"})
    second = backend.call("list_orders", {"user_id": "u01", "page": 2})
    assert [o["order_id"] for o in first["orders"]] == ["o0001", "o0002", "o0003", "o0004", "o0005"]
    assert first["next_page"] == 2
    assert [o["order_id"] for o in second["orders"]] == ["o0006", "o0007"]
    assert second["next_page"] is None
    assert second["orders"][0]["product_names"] == ["Desk Lamp", "Wool Scarf"]


def test_cancel_then_refund_in_full_then_no_second_refund(backend):
    backend.call("cancel_order", {"order_id": "o0003", "reason": "changed my mind"})
    refund = backend.call("refund_order", {"order_id": "o0003", "reason": "changed my mind"})
    assert refund["amount"] == 1000
    with pytest.raises(ToolError, match="already refunded"):
        backend.call("refund_order", {"order_id": "o0003", "reason": "again"})


def test_line_item_refund_is_discounted_by_the_coupon(backend, world):
    world.orders["o0006"].coupon = "SAVE10"
    refund = backend.call("refund_order", {"order_id": "o0006", "reason": "damaged", "product_id": "p02"})
    assert refund["amount"] == 2 * 2500 * 90 // 100


def test_reserve_create_escalate_message(backend, world):
    backend.call("reserve_item", {"user_id": "u01", "product_id": "p01", "qty": 2})
    assert world.inventory["p01"] == 1
    ticket = backend.call("create_ticket", {"user_id": "u02", "subject": "late", "product_id": "p01"})
    backend.call("escalate_ticket", {"ticket_id": ticket["ticket_id"]})
    with pytest.raises(ToolError, match="already escalated"):
        backend.call("escalate_ticket", {"ticket_id": ticket["ticket_id"]})
    backend.call("send_message", {"user_id": "u02", "text": "on it"})
    assert world.tickets[ticket["ticket_id"]].status == "escalated"
    assert world.messages[-1].text == "on it"


def test_search_users_finds_aliases_that_email_lookup_misses(backend):
    assert backend.call("search_users", {"query": "ADA7@mail.test"})["user_id"] == "u01"


def test_results_are_copies_not_views_of_the_state(backend, world):
    order = backend.call("get_order", {"order_id": "o0003"})
    order["status"] = "cancelled"
    order["shipping_address"]["zip"] = "00000"
    assert world.orders["o0003"].status == "placed"
    assert world.orders["o0003"].shipping_address["zip"] == "12345"


def test_stale_reads_come_from_the_lagging_replica(scripted):
    backend = scripted({("get_order", "o0002", 0): "stale", ("check_inventory", "p01", 0): "stale"})
    stale = backend.call("get_order", {"order_id": "o0002"})
    fresh = backend.call("get_order", {"order_id": "o0002"})
    assert (stale["status"], stale["stale"]) == ("placed", True)
    assert fresh["status"] == "shipped" and "stale" not in fresh
    assert backend.call("check_inventory", {"product_id": "p01"})["available"] == 0
    assert backend.world.inventory["p01"] == 3


def test_transient_fault_then_retry_succeeds(scripted):
    backend = scripted({("get_order", "o0001", 0): "transient"})
    with pytest.raises(ToolError) as caught:
        backend.call("get_order", {"order_id": "o0001"})
    assert (caught.value.code, caught.value.injected) == ("transient_unavailable", True)
    assert backend.call("get_order", {"order_id": "o0001"})["order_id"] == "o0001"


def test_rate_limit_blocks_the_tool_until_the_agent_backs_off(scripted):
    backend = scripted({("get_order", "o0001", 0): "rate_limited"})
    with pytest.raises(ToolError, match="rate_limited"):
        backend.call("get_order", {"order_id": "o0001"})
    with pytest.raises(ToolError, match="rate_limited"):  # immediately: still blocked, and no event drawn
        backend.call("get_order", {"order_id": "o0003"})
    assert [(e.resource, e.occurrence) for e in backend.events] == [("o0001", 0)]
    backend.advance(2)
    assert backend.call("get_order", {"order_id": "o0001"})["order_id"] == "o0001"
    assert backend.events[-1].occurrence == 1


def test_a_write_under_a_fault_changes_nothing(scripted):
    backend = scripted({("cancel_order", "o0003", 0): "transient"})
    with pytest.raises(ToolError):
        backend.call("cancel_order", {"order_id": "o0003", "reason": "x"})
    assert backend.world.orders["o0003"].status == "placed"
