"""Hand-built toolsim states: small enough to reason about line by line."""

import pytest

from suites.toolsim.backend import Backend
from suites.toolsim.faults import FaultSchedule
from suites.toolsim.world import LineItem, Order, Product, User, World

HOME = {"street": "1 Elm St", "city": "Riverton", "zip": "12345"}


class ScriptedFaults:
    """A fault schedule that fires exactly the faults it is given, keyed by event."""

    def __init__(self, faults: dict[tuple[str, str, int], str], side_effects: bool = False) -> None:
        self.faults, self.side_effects = faults, side_effects

    def fault(self, tool: str, resource: str, occurrence: int, read: bool) -> str | None:
        return self.faults.get((tool, resource, occurrence))


def build_world() -> World:
    """Ada (standard) has 7 orders, so her latest (o0007, placed) is on page 2; Bo is VIP.
    o0002 shipped recently: the replica still says "placed". The replica also lags on the
    lamp's stock (0 there, 3 in truth)."""
    users = {
        "u01": User("u01", "Ada Park", "ada.park@example.com", "ada7@mail.test", "standard", dict(HOME)),
        "u02": User("u02", "Bo Lund", "bo.lund@example.com", "bo9@mail.test", "vip", dict(HOME)),
    }
    products = {
        "p01": Product("p01", "Desk Lamp", 1000, "home"),
        "p02": Product("p02", "Wool Scarf", 2500, "apparel"),
    }
    statuses = ["delivered", "shipped", "placed", "cancelled", "placed", "delivered", "placed"]
    orders = {}
    for i, status in enumerate(statuses, start=1):
        items = [LineItem("p01", "Desk Lamp", 1, 1000)]
        if i == 6:
            items.append(LineItem("p02", "Wool Scarf", 2, 2500))
        orders[f"o{i:04d}"] = Order(f"o{i:04d}", "u01", i, status, items, dict(HOME),
                                    replica_status="placed" if i == 2 else "")
    orders["o0008"] = Order("o0008", "u02", 8, "placed", [LineItem("p02", "Wool Scarf", 1, 2500)], dict(HOME))
    return World(users, products, orders, inventory={"p01": 3, "p02": 0}, replica_inventory={"p01": 0, "p02": 0})


@pytest.fixture
def world() -> World:
    return build_world()


@pytest.fixture
def backend(world) -> Backend:
    """No faults at all."""
    return Backend(world, FaultSchedule(noise_seed=0, fault_rate=0.0))


@pytest.fixture
def scripted():
    """``scripted({("get_order", "o0001", 0): "stale"})`` -> a Backend on a fresh world
    (``side_effects=True``: suite version 2's quotas)."""
    return lambda faults, side_effects=False: Backend(build_world(), ScriptedFaults(faults, side_effects))
