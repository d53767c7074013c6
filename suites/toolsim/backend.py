"""The simulated customer-service backend: sixteen tools over a ``World``.

``Backend.call(tool, args)`` validates the arguments, consumes one tick of the clock,
draws the event's fault from the schedule (``faults.py``), then runs the tool. Results
are fresh JSON-able dicts, never views of the state, so an agent cannot change the world
except through tools. Reads served stale come from a replica taken when the episode
starts (with each record's lag applied) and are marked ``"stale": true``; writes always
act on the true state, so a stale read misleads but never corrupts.

With ``side_effects`` (suite version 2, ``faults.py``) a ``lost_ack`` write is applied
and then reported as ``transient_unavailable``, and every tool answers at most
``CALL_QUOTA`` calls: the quota is checked before the rate-limit block and the fault
draw, so a blocked or failing retry still uses one.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Callable

from suites.toolsim.faults import CALL_QUOTA, RATE_LIMIT_WAIT, FaultEvent, FaultSchedule
from suites.toolsim.observations import paged
from suites.toolsim.tools import ToolError, validate_args
from suites.toolsim.world import Message, Order, Refund, Reservation, Ticket, World

PAGE_SIZE = 5

Handler = Callable[[World, dict[str, Any]], dict[str, Any]]


def _user(world: World, user_id: str):
    user = world.users.get(user_id)
    if user is None:
        raise ToolError("not_found", f"no user {user_id!r}")
    return user


def _order(world: World, order_id: str) -> Order:
    order = world.orders.get(order_id)
    if order is None:
        raise ToolError("not_found", f"no order {order_id!r}")
    return order


def _product(world: World, product_id: str):
    product = world.products.get(product_id)
    if product is None:
        raise ToolError("not_found", f"no product {product_id!r}")
    return product


def _user_json(user) -> dict[str, Any]:
    return {"user_id": user.user_id, "name": user.name, "email": user.email, "tier": user.tier,
            "address": dict(user.address)}


def _order_json(world: World, order: Order) -> dict[str, Any]:
    return {
        "order_id": order.order_id, "user_id": order.user_id, "created": order.created, "status": order.status,
        "items": [{"product_id": i.product_id, "name": i.name, "qty": i.qty, "price": i.price} for i in order.items],
        "shipping_address": dict(order.shipping_address), "coupon": order.coupon,
        "total": world.order_total(order), "refunded": world.refunded(order.order_id),
    }


def _summary_json(world: World, order: Order) -> dict[str, Any]:
    return {
        "order_id": order.order_id, "created": order.created, "status": order.status,
        "total": world.order_total(order),
        "product_ids": [i.product_id for i in order.items], "product_names": [i.name for i in order.items],
    }


def _require_status(order: Order, allowed: tuple[str, ...], action: str) -> None:
    if order.status not in allowed:
        raise ToolError(
            "precondition_failed",
            f"order {order.order_id} is {order.status}; {action} needs it to be {' or '.join(allowed)}",
        )


def get_user(world: World, args: dict[str, Any]) -> dict[str, Any]:
    return _user_json(_user(world, args["user_id"]))


def find_user_by_email(world: World, args: dict[str, Any]) -> dict[str, Any]:
    for user in world.users.values():
        if user.email == args["email"]:
            return _user_json(user)
    raise ToolError("not_found", f"no user has primary email {args['email']!r}")


def search_users(world: World, args: dict[str, Any]) -> dict[str, Any]:
    query = args["query"].strip().lower()
    for user in world.users.values():
        if query in (user.email.lower(), user.alias.lower(), user.name.lower()):
            return _user_json(user)
    raise ToolError("not_found", f"no user matches {args['query']!r}")


def list_orders(world: World, args: dict[str, Any]) -> dict[str, Any]:
    _user(world, args["user_id"])
    page = args.get("page", 1)
    orders = world.orders_of(args["user_id"])
    chunk = orders[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    more = page * PAGE_SIZE < len(orders)
    return {"user_id": args["user_id"], "page": page, "next_page": page + 1 if more else None,
            "orders": [_summary_json(world, o) for o in chunk]}


def get_order(world: World, args: dict[str, Any]) -> dict[str, Any]:
    return _order_json(world, _order(world, args["order_id"]))


def cancel_order(world: World, args: dict[str, Any]) -> dict[str, Any]:
    order = _order(world, args["order_id"])
    _require_status(order, ("placed",), "cancellation")
    order.status = "cancelled"
    return {"order_id": order.order_id, "status": order.status}


def refund_order(world: World, args: dict[str, Any]) -> dict[str, Any]:
    order = _order(world, args["order_id"])
    _require_status(order, ("cancelled", "delivered"), "a refund")
    product_id = args.get("product_id")
    if product_id is None:
        amount = world.order_total(order) - world.refunded(order.order_id)
    else:
        line = next((i for i in order.items if i.product_id == product_id), None)
        if line is None:
            raise ToolError("invalid_argument", f"product {product_id!r} is not in order {order.order_id}")
        amount = world.discounted(order, line.qty * line.price)
    if amount <= 0 or world.refunded(order.order_id) + amount > world.order_total(order):
        raise ToolError("precondition_failed", f"order {order.order_id} is already refunded")
    refund = Refund(f"r{len(world.refunds) + 1:04d}", order.order_id, product_id, amount, args["reason"])
    world.refunds.append(refund)
    return {"refund_id": refund.refund_id, "order_id": order.order_id, "amount": amount, "reason": refund.reason}


def update_address(world: World, args: dict[str, Any]) -> dict[str, Any]:
    order = _order(world, args["order_id"])
    _require_status(order, ("placed",), "an address change")
    order.shipping_address = dict(args["address"])
    return {"order_id": order.order_id, "shipping_address": dict(order.shipping_address)}


def apply_coupon(world: World, args: dict[str, Any]) -> dict[str, Any]:
    order = _order(world, args["order_id"])
    if args["code"] not in world.coupons:
        raise ToolError("not_found", f"no coupon {args['code']!r}")
    _require_status(order, ("placed",), "a coupon")
    if order.coupon is not None:
        raise ToolError("precondition_failed", f"order {order.order_id} already has coupon {order.coupon}")
    order.coupon = args["code"]
    return {"order_id": order.order_id, "coupon": order.coupon, "total": world.order_total(order)}


def get_product(world: World, args: dict[str, Any]) -> dict[str, Any]:
    p = _product(world, args["product_id"])
    return {"product_id": p.product_id, "name": p.name, "price": p.price, "category": p.category}


def search_products(world: World, args: dict[str, Any]) -> dict[str, Any]:
    query = args["query"].strip().lower()
    found = [p for p in world.products.values() if query in p.name.lower()]
    return {"products": [{"product_id": p.product_id, "name": p.name, "price": p.price} for p in found]}


def check_inventory(world: World, args: dict[str, Any]) -> dict[str, Any]:
    product = _product(world, args["product_id"])
    return {"product_id": product.product_id, "available": world.inventory[product.product_id]}


def reserve_item(world: World, args: dict[str, Any]) -> dict[str, Any]:
    _user(world, args["user_id"])
    product = _product(world, args["product_id"])
    available = world.inventory[product.product_id]
    if available < args["qty"]:
        raise ToolError("precondition_failed", f"{product.product_id}: {available} available, {args['qty']} requested")
    world.inventory[product.product_id] -= args["qty"]
    reservation = Reservation(f"v{len(world.reservations) + 1:04d}", args["user_id"], product.product_id, args["qty"])
    world.reservations.append(reservation)
    return {"reservation_id": reservation.reservation_id, "product_id": product.product_id, "qty": reservation.qty}


def create_ticket(world: World, args: dict[str, Any]) -> dict[str, Any]:
    _user(world, args["user_id"])
    if "order_id" in args:
        _order(world, args["order_id"])
    if "product_id" in args:
        _product(world, args["product_id"])
    ticket = Ticket(f"t{len(world.tickets) + 1:04d}", args["user_id"], args["subject"],
                    args.get("order_id"), args.get("product_id"), "open")
    world.tickets[ticket.ticket_id] = ticket
    return {"ticket_id": ticket.ticket_id, "ticket_status": ticket.status}


def escalate_ticket(world: World, args: dict[str, Any]) -> dict[str, Any]:
    ticket = world.tickets.get(args["ticket_id"])
    if ticket is None:
        raise ToolError("not_found", f"no ticket {args['ticket_id']!r}")
    if ticket.status != "open":
        raise ToolError("precondition_failed", f"ticket {ticket.ticket_id} is already {ticket.status}")
    ticket.status = "escalated"
    return {"ticket_id": ticket.ticket_id, "ticket_status": ticket.status}


def send_message(world: World, args: dict[str, Any]) -> dict[str, Any]:
    _user(world, args["user_id"])
    world.messages.append(Message(args["user_id"], args["text"]))
    return {"user_id": args["user_id"], "delivered": True}


HANDLERS: dict[str, Handler] = {fn.__name__: fn for fn in (
    get_user, find_user_by_email, search_users, list_orders, get_order, cancel_order, refund_order,
    update_address, apply_coupon, get_product, search_products, check_inventory, reserve_item,
    create_ticket, escalate_ticket, send_message,
)}


def replica_of(world: World) -> World:
    """The lagging read replica: a copy with every record's replica view applied."""
    replica = world.clone()
    for order in replica.orders.values():
        order.status = order.replica_status
    replica.inventory = dict(replica.replica_inventory)
    return replica


class Backend:
    """The world plus a clock, the fault schedule and the events drawn so far."""

    def __init__(self, world: World, schedule: FaultSchedule, cursor_paging: bool = False) -> None:
        self.world, self.schedule, self.cursor_paging = world, schedule, cursor_paging
        self.replica = replica_of(world)
        self.clock = 0
        self.events: list[FaultEvent] = []
        self._occurrences: Counter[tuple[str, str]] = Counter()
        self._blocked_until: dict[str, int] = {}
        self._calls: Counter[str] = Counter()

    def advance(self, ticks: int) -> None:
        """Let time pass (an agent's backoff)."""
        self.clock += ticks

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one tool call; ToolError on any failure (see the module docstring)."""
        spec = validate_args(tool, args)
        now, self.clock = self.clock, self.clock + 1
        if self.schedule.side_effects:
            self._calls[tool] += 1
            if self._calls[tool] > CALL_QUOTA:
                raise ToolError("rate_limited", f"{tool}: quota of {CALL_QUOTA} calls used up", False)
        if now < self._blocked_until.get(tool, 0):
            raise ToolError("rate_limited", f"{tool} is rate limited; retry after {RATE_LIMIT_WAIT} ticks", True)
        resource = str(args[spec.resource])
        occurrence = self._occurrences[(tool, resource)]
        self._occurrences[(tool, resource)] += 1
        fault = self.schedule.fault(tool, resource, occurrence, spec.read)
        self.events.append(FaultEvent(tool, resource, occurrence, fault))
        if fault == "transient":
            raise ToolError("transient_unavailable", f"{tool} is temporarily unavailable", True)
        if fault == "rate_limited":
            self._blocked_until[tool] = now + 1 + RATE_LIMIT_WAIT
            raise ToolError("rate_limited", f"{tool} is rate limited; retry after {RATE_LIMIT_WAIT} ticks", True)
        if fault == "lost_ack":
            HANDLERS[tool](self.world, copy.deepcopy(args))
            raise ToolError("transient_unavailable", f"{tool} timed out before answering", True)
        if fault == "stale":
            return self._answer(tool, args, {**HANDLERS[tool](self.replica, dict(args)), "stale": True})
        return self._answer(tool, args, HANDLERS[tool](self.world, copy.deepcopy(args)))

    def _answer(self, tool: str, args: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        return paged(tool, args, result) if self.cursor_paging else result
