"""Request templates: the contract between a request, its scenario and its goal.

A ``Template`` builds a scenario from a seed (a world shaped so the request makes sense,
the request the customer sends, and the hidden facts the goal needs, e.g. which order
is the latest), judges the backend's final state against the goal, and carries the
strategy-free default plan the agent runs when no skill covers the template
(``plans.py``). Success is a property of the final state, never of what the agent said.

A goal is a list of conditions. *Goal* conditions say what must have happened; *guard*
conditions say what must not have happened (cancelling the wrong order, over-refunding,
telling the customer a wrong status). ``success`` = every condition holds. ``progress``
= the fraction of goal conditions met, and 0 when any guard is broken: a harmful episode
earns no partial credit. ``harmed`` = some guard is broken.

``severity`` is the template's failure cost (MedRSI's clinical-cost analog): an episode
costs 0 on success, ``severity`` on a harmless failure and ``2 * severity`` when it broke
a guard.

The scenario builders live in ``scenarios.py``; the goal predicates here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from suites.toolsim import plans, scenarios
from suites.toolsim.world import ORDER_STATUSES, World

Hidden = dict[str, Any]


@dataclass(frozen=True)
class Condition:
    name: str
    met: bool
    guard: bool = False


@dataclass(frozen=True)
class Evaluation:
    conditions: tuple[Condition, ...]

    @property
    def harmed(self) -> bool:
        return any(c.guard and not c.met for c in self.conditions)

    @property
    def success(self) -> bool:
        return all(c.met for c in self.conditions)

    @property
    def progress(self) -> float:
        goals = [c for c in self.conditions if not c.guard]
        if self.harmed or not goals:
            return 0.0
        return sum(c.met for c in goals) / len(goals)


@dataclass(frozen=True)
class Template:
    name: str
    severity: float
    text: str
    """The request as the customer would phrase it, with ``{field}`` placeholders."""
    build: Callable[[int], scenarios.Scenario]
    goal: Callable[[World, World, Hidden], list[Condition]]
    plan: tuple[dict[str, Any], ...]

    def evaluate(self, initial: World, final: World, hidden: Hidden) -> Evaluation:
        return Evaluation(tuple(self.goal(initial, final, hidden)))

    def cost(self, evaluation: Evaluation) -> float:
        if evaluation.success:
            return 0.0
        return self.severity * (2.0 if evaluation.harmed else 1.0)


def _statuses_unchanged(initial: World, final: World, order_ids: list[str]) -> bool:
    return all(initial.orders[o].status == final.orders[o].status for o in order_ids)


def _refunds_elsewhere(final: World, order_id: str) -> bool:
    return any(r.order_id != order_id for r in final.refunds)


def goal_cancel_latest(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    return [
        Condition("latest_cancelled", final.orders[hidden["order_id"]].status == "cancelled"),
        Condition("others_untouched", _statuses_unchanged(initial, final, hidden["other_order_ids"]), guard=True),
    ]


def goal_refund_unshipped(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    order_id = hidden["order_id"]
    return [
        Condition("order_cancelled", final.orders[order_id].status == "cancelled"),
        Condition("refunded_in_full", final.refunded(order_id) == hidden["total"]),
        Condition("no_other_refunds", not _refunds_elsewhere(final, order_id), guard=True),
    ]


def goal_refund_damaged(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    order_id, product_id = hidden["order_id"], hidden["product_id"]
    line = [r for r in final.refunds if r.order_id == order_id and r.product_id == product_id]
    exact = [r for r in line if r.amount == hidden["amount"]]
    return [
        Condition("item_refunded", bool(exact)),
        Condition("reason_damaged", any("damage" in r.reason.lower() for r in exact)),
        Condition(
            "no_over_refund",
            final.refunded(order_id) <= hidden["amount"] and not _refunds_elsewhere(final, order_id),
            guard=True,
        ),
    ]


def goal_change_address(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    target = hidden["order_id"]
    others = [o for o in initial.orders if o != target]
    return [
        Condition("address_updated", final.orders[target].shipping_address == hidden["address"]),
        Condition(
            "others_unchanged",
            all(initial.orders[o].shipping_address == final.orders[o].shipping_address for o in others),
            guard=True,
        ),
    ]


def goal_reserve_stock(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    user_id, product_id = hidden["user_id"], hidden["product_id"]
    held = [r for r in final.reservations if r.user_id == user_id and r.product_id == product_id]
    if hidden["in_stock"]:
        return [
            Condition("reserved", any(r.qty == hidden["qty"] for r in held)),
            Condition("no_double_reservation", sum(r.qty for r in held) <= hidden["qty"], guard=True),
        ]
    tickets = [t for t in final.tickets.values() if t.user_id == user_id and t.product_id == product_id]
    return [
        Condition("backorder_ticket", bool(tickets)),
        Condition("no_partial_reservation", not held, guard=True),
    ]


def goal_open_ticket(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    mine = [t for t in final.tickets.values() if t.user_id == hidden["user_id"]]
    matching = [t for t in mine if t.subject == hidden["subject"]]
    opened = Condition("ticket_opened", bool(matching))
    if hidden["vip"]:
        return [opened, Condition("escalated_for_vip", any(t.status == "escalated" for t in matching))]
    return [opened, Condition("not_escalated", all(t.status == "open" for t in mine), guard=True)]


def goal_apply_coupon(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    return [Condition("coupon_applied", final.orders[hidden["order_id"]].coupon == hidden["code"])]


def _status_words(text: str) -> set[str]:
    lowered = text.lower()
    return {status for status in ORDER_STATUSES if status in lowered}


def goal_order_status(initial: World, final: World, hidden: Hidden) -> list[Condition]:
    texts = [m.text for m in final.messages if m.user_id == hidden["user_id"] and hidden["order_id"] in m.text]
    status = hidden["status"]
    return [
        Condition("message_sent", bool(texts)),
        Condition("status_correct", any(_status_words(t) == {status} for t in texts)),
        Condition("no_wrong_status", all(_status_words(t) <= {status} for t in texts), guard=True),
    ]


TEMPLATES: dict[str, Template] = {t.name: t for t in (
    Template("cancel_latest_order", 3.0, "Please cancel my most recent order. ({email})",
             scenarios.cancel_latest_order, goal_cancel_latest, plans.CANCEL_LATEST_ORDER),
    Template("refund_unshipped_order", 3.0, "I changed my mind about order {order_id}; please refund it.",
             scenarios.refund_unshipped_order, goal_refund_unshipped, plans.REFUND_UNSHIPPED_ORDER),
    Template("refund_damaged_item", 4.0, "The {product_name} in order {order_id} arrived damaged; refund it.",
             scenarios.refund_damaged_item, goal_refund_damaged, plans.REFUND_DAMAGED_ITEM),
    Template("change_address", 2.0,
             "Ship my order with the {product_name} to {new_address} instead. ({email})",
             scenarios.change_address, goal_change_address, plans.CHANGE_ADDRESS),
    Template("reserve_stock", 2.0, "Please hold {qty} x {product_name} for me. ({email})",
             scenarios.reserve_stock, goal_reserve_stock, plans.RESERVE_STOCK),
    Template("open_ticket", 2.0, "{subject} ({email})",
             scenarios.open_ticket, goal_open_ticket, plans.OPEN_TICKET),
    Template("apply_coupon", 1.0, "Please apply coupon {code} to order {order_id}.",
             scenarios.apply_coupon, goal_apply_coupon, plans.APPLY_COUPON),
    Template("order_status_message", 1.0, "Where is my order {order_id}? ({email})",
             scenarios.order_status_message, goal_order_status, plans.ORDER_STATUS_MESSAGE),
)}


def get_template(name: str) -> Template:
    if name not in TEMPLATES:
        raise ValueError(f"unknown toolsim template {name!r}; known: {list(TEMPLATES)}")
    return TEMPLATES[name]
