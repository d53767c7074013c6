"""Scenario builders, one per request template: a seeded world shaped for the request,
the request itself, and the hidden facts its goal predicate checks.

Every builder starts from ``generate_world`` and then adds what the request needs, so
the same seed always gives the same scenario. The shaping is where each template's
difficulty comes from: orders spread over several pages, customers who write from an
alias address (``ALIAS_RATE``), orders that must be cancelled before a refund, stock
that may be short, VIP customers, replicas that lag on exactly the order asked about.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suites.toolsim.seeding import Draw
from suites.toolsim.world import (
    COUPONS,
    LineItem,
    User,
    World,
    add_order,
    generate_world,
    lag_replica,
    random_address,
    random_items,
)

ALIAS_RATE = 0.2
"""Share of email-identified requests sent from the customer's alias, which
``find_user_by_email`` does not index (``search_users`` does)."""
SUBJECTS = (
    "My package arrived late",
    "I was charged twice",
    "An item is missing from my box",
    "I cannot log in to my account",
    "The tracking link does not work",
)


@dataclass(frozen=True)
class Scenario:
    world: World
    request: dict[str, Any]
    """What the customer says: the agent's only input."""
    hidden: dict[str, Any]
    """Facts the goal predicate needs and the agent must find out (never shown to it)."""


def _start(world_seed: int) -> tuple[Draw, World, User]:
    draw = Draw(world_seed)
    world = generate_world(draw)
    return draw, world, draw.choice(list(world.users.values()))


def _email(draw: Draw, user: User) -> str:
    return user.alias if draw.chance(ALIAS_RATE) else user.email


def cancel_latest_order(world_seed: int) -> Scenario:
    """3-12 orders, so the latest (placed) is on page 1 only for users with <= 5."""
    draw, world, user = _start(world_seed)
    existing = len(world.orders_of(user.user_id))
    for _ in range(max(0, draw.integer(3, 12) - existing - 1)):
        add_order(world, draw, user.user_id, draw.choice(("placed", "shipped", "delivered", "cancelled")))
    latest = add_order(world, draw, user.user_id, "placed")
    others = [o.order_id for o in world.orders_of(user.user_id) if o.order_id != latest.order_id]
    return Scenario(
        world,
        {"email": _email(draw, user)},
        {"user_id": user.user_id, "order_id": latest.order_id, "other_order_ids": others},
    )


def refund_unshipped_order(world_seed: int) -> Scenario:
    """A placed order: a refund needs a cancellation first."""
    draw, world, user = _start(world_seed)
    order = add_order(world, draw, user.user_id, "placed")
    return Scenario(
        world, {"order_id": order.order_id}, {"order_id": order.order_id, "total": world.order_total(order)}
    )


def refund_damaged_item(world_seed: int) -> Scenario:
    """A delivered order of 2-3 products; only the damaged one may be refunded."""
    draw, world, user = _start(world_seed)
    products = draw.sample(list(world.products.values()), draw.integer(2, 3))
    items = [LineItem(p.product_id, p.name, draw.integer(1, 3), p.price) for p in products]
    order = add_order(world, draw, user.user_id, "delivered", items)
    damaged = draw.choice(items)
    return Scenario(
        world,
        {"order_id": order.order_id, "product_name": damaged.name},
        {
            "order_id": order.order_id,
            "product_id": damaged.product_id,
            "amount": world.discounted(order, damaged.qty * damaged.price),
        },
    )


def _strip_product(world: World, draw: Draw, user_id: str, product_id: str) -> None:
    """Replace ``product_id`` in the user's orders, so a later order is the only one with it."""
    for order in world.orders_of(user_id):
        for index, item in enumerate(order.items):
            if item.product_id == product_id:
                taken = {i.product_id for i in order.items} | {product_id}
                swap = draw.choice([p for p in world.products.values() if p.product_id not in taken])
                order.items[index] = LineItem(swap.product_id, swap.name, item.qty, swap.price)


def change_address(world_seed: int) -> Scenario:
    """The order to re-address is the only one with the named product, placed, and
    usually past page 1 (the user ends up with 3-12 orders)."""
    draw, world, user = _start(world_seed)
    product = draw.choice(list(world.products.values()))
    _strip_product(world, draw, user.user_id, product.product_id)
    existing = len(world.orders_of(user.user_id))
    new = max(2, draw.integer(3, 12) - existing)
    target_index = draw.integer(0, new - 1)
    target = None
    for index in range(new):
        if index == target_index:
            items = [LineItem(product.product_id, product.name, draw.integer(1, 2), product.price)]
            items += random_items(world, draw, exclude=(product.product_id,))[:1]
            target = add_order(world, draw, user.user_id, "placed", items)
        else:
            status = draw.choice(("placed", "shipped", "delivered"))
            add_order(world, draw, user.user_id, status, random_items(world, draw, exclude=(product.product_id,)))
    address = random_address(draw)
    return Scenario(
        world,
        {"email": _email(draw, user), "product_name": product.name, "new_address": address},
        {"user_id": user.user_id, "order_id": target.order_id, "address": address},
    )


def reserve_stock(world_seed: int) -> Scenario:
    """In stock 60% of the time; the replica lags on half the products either way."""
    draw, world, user = _start(world_seed)
    product = draw.choice(list(world.products.values()))
    qty = draw.integer(1, 3)
    in_stock = draw.chance(0.6)
    pid = product.product_id
    world.inventory[pid] = qty + draw.integer(0, 4) if in_stock else draw.integer(0, qty - 1)
    lagging = draw.chance(0.5)
    if in_stock:
        world.replica_inventory[pid] = 0 if lagging else world.inventory[pid]
    else:
        world.replica_inventory[pid] = qty + draw.integer(0, 3) if lagging else world.inventory[pid]
    return Scenario(
        world,
        {"email": _email(draw, user), "product_name": product.name, "qty": qty},
        {"user_id": user.user_id, "product_id": pid, "qty": qty, "in_stock": in_stock},
    )


def open_ticket(world_seed: int) -> Scenario:
    """VIP customers (40%) must have their ticket escalated; others must not."""
    draw, world, user = _start(world_seed)
    user.tier = "vip" if draw.chance(0.4) else "standard"
    subject = draw.choice(SUBJECTS)
    return Scenario(
        world,
        {"email": _email(draw, user), "subject": subject},
        {"user_id": user.user_id, "subject": subject, "vip": user.tier == "vip"},
    )


def apply_coupon(world_seed: int) -> Scenario:
    """A plain request: only injected faults stand in the way."""
    draw, world, user = _start(world_seed)
    order = add_order(world, draw, user.user_id, "placed")
    code = draw.choice(sorted(COUPONS))
    return Scenario(world, {"order_id": order.order_id, "code": code}, {"order_id": order.order_id, "code": code})


def order_status_message(world_seed: int) -> Scenario:
    """The order moved on recently, so a stale read reports its previous status."""
    draw, world, user = _start(world_seed)
    order = add_order(world, draw, user.user_id, draw.choice(("shipped", "delivered")))
    lag_replica(order)
    return Scenario(
        world,
        {"email": _email(draw, user), "order_id": order.order_id},
        {"user_id": user.user_id, "order_id": order.order_id, "status": order.status},
    )
