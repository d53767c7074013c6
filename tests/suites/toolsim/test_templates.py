import pytest

from suites.toolsim.templates import TEMPLATES, get_template
from suites.toolsim.world import Message, Refund, Reservation, Ticket

NEW_HOME = {"street": "9 Oak Ave", "city": "Fairview", "zip": "54321"}


def _judge(name, initial, final, hidden):
    template = get_template(name)
    evaluation = template.evaluate(initial, final, hidden)
    return evaluation.success, evaluation.progress, template.cost(evaluation)


def test_there_are_at_least_8_templates_each_with_a_severity():
    assert len(TEMPLATES) >= 8
    assert all(t.severity > 0 for t in TEMPLATES.values())


def test_cancel_latest(world):
    hidden = {"user_id": "u01", "order_id": "o0007", "other_order_ids": [f"o{i:04d}" for i in range(1, 7)]}
    final = world.clone()
    assert _judge("cancel_latest_order", world, final, hidden) == (False, 0.0, 3.0)
    final.orders["o0005"].status = "cancelled"  # the latest of page 1: wrong order, a harm
    assert _judge("cancel_latest_order", world, final, hidden) == (False, 0.0, 6.0)
    final = world.clone()
    final.orders["o0007"].status = "cancelled"
    assert _judge("cancel_latest_order", world, final, hidden) == (True, 1.0, 0.0)


def test_refund_unshipped_gives_half_credit_for_the_cancellation(world):
    hidden = {"order_id": "o0003", "total": 1000}
    final = world.clone()
    final.orders["o0003"].status = "cancelled"
    assert _judge("refund_unshipped_order", world, final, hidden) == (False, 0.5, 3.0)
    final.refunds.append(Refund("r0001", "o0003", None, 1000, "customer request"))
    assert _judge("refund_unshipped_order", world, final, hidden) == (True, 1.0, 0.0)
    final.refunds.append(Refund("r0002", "o0001", None, 1000, "oops"))
    assert _judge("refund_unshipped_order", world, final, hidden) == (False, 0.0, 6.0)


def test_refund_damaged_item_must_refund_only_the_line(world):
    hidden = {"order_id": "o0006", "product_id": "p02", "amount": 5000}
    whole = world.clone()
    whole.refunds.append(Refund("r0001", "o0006", None, 6000, "damaged"))
    assert _judge("refund_damaged_item", world, whole, hidden) == (False, 0.0, 8.0)
    line = world.clone()
    line.refunds.append(Refund("r0001", "o0006", "p02", 5000, "customer request"))
    assert _judge("refund_damaged_item", world, line, hidden) == (False, 0.5, 4.0)
    line.refunds[0] = Refund("r0001", "o0006", "p02", 5000, "Damaged in transit")
    assert _judge("refund_damaged_item", world, line, hidden) == (True, 1.0, 0.0)


def test_change_address_must_leave_other_orders_alone(world):
    hidden = {"user_id": "u01", "order_id": "o0007", "address": NEW_HOME}
    final = world.clone()
    final.orders["o0007"].shipping_address = dict(NEW_HOME)
    assert _judge("change_address", world, final, hidden) == (True, 1.0, 0.0)
    final.orders["o0003"].shipping_address = dict(NEW_HOME)
    assert _judge("change_address", world, final, hidden) == (False, 0.0, 4.0)


def test_reserve_stock_in_and_out_of_stock(world):
    in_stock = {"user_id": "u01", "product_id": "p01", "qty": 2, "in_stock": True}
    final = world.clone()
    final.reservations.append(Reservation("v0001", "u01", "p01", 2))
    assert _judge("reserve_stock", world, final, in_stock) == (True, 1.0, 0.0)
    final.reservations.append(Reservation("v0002", "u01", "p01", 2))
    assert _judge("reserve_stock", world, final, in_stock) == (False, 0.0, 4.0)
    short = {"user_id": "u01", "product_id": "p02", "qty": 1, "in_stock": False}
    final = world.clone()
    assert _judge("reserve_stock", world, final, short) == (False, 0.0, 2.0)
    final.tickets["t0001"] = Ticket("t0001", "u01", "backorder", None, "p02", "open")
    assert _judge("reserve_stock", world, final, short) == (True, 1.0, 0.0)


def test_open_ticket_escalates_exactly_the_vips(world):
    vip = {"user_id": "u02", "subject": "Late", "vip": True}
    final = world.clone()
    final.tickets["t0001"] = Ticket("t0001", "u02", "Late", None, None, "open")
    assert _judge("open_ticket", world, final, vip) == (False, 0.5, 2.0)
    final.tickets["t0001"].status = "escalated"
    assert _judge("open_ticket", world, final, vip) == (True, 1.0, 0.0)
    standard = {"user_id": "u01", "subject": "Late", "vip": False}
    final = world.clone()
    final.tickets["t0001"] = Ticket("t0001", "u01", "Late", None, None, "escalated")
    assert _judge("open_ticket", world, final, standard) == (False, 0.0, 4.0)


def test_apply_coupon(world):
    hidden = {"order_id": "o0003", "code": "SAVE10"}
    final = world.clone()
    final.orders["o0003"].coupon = "SAVE10"
    assert _judge("apply_coupon", world, final, hidden) == (True, 1.0, 0.0)


def test_order_status_message_penalises_a_wrong_status(world):
    hidden = {"user_id": "u01", "order_id": "o0002", "status": "shipped"}
    final = world.clone()
    final.messages.append(Message("u01", "Your order o0002 is placed."))  # a stale read, passed on
    assert _judge("order_status_message", world, final, hidden) == (False, 0.0, 2.0)
    final = world.clone()
    final.messages.append(Message("u01", "Your order o0002 is shipped."))
    assert _judge("order_status_message", world, final, hidden) == (True, 1.0, 0.0)
    final = world.clone()
    final.messages.append(Message("u01", "Your order is shipped."))  # which order?
    assert _judge("order_status_message", world, final, hidden) == (False, 0.0, 1.0)


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_scenarios_are_deterministic_and_start_unsolved(name):
    template = get_template(name)
    first, again = template.build(1234), template.build(1234)
    assert (first.request, first.hidden) == (again.request, again.hidden)
    assert template.build(1235).request != first.request or template.build(1236).request != first.request
    assert not template.evaluate(first.world, first.world.clone(), first.hidden).success


def test_unknown_template_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown toolsim template 'x'; known: \\['cancel_latest_order'"):
        get_template("x")
