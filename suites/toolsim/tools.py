"""The tool interface: typed argument specs, validation and the typed error.

This is the frozen interface every harness and policy sees (Growing Harness keeps it
fixed while the harness grows). Arguments are checked before anything else happens, so a
malformed call costs a step but draws no fault and changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ERROR_CODES = (
    "invalid_argument",
    "not_found",
    "precondition_failed",
    "rate_limited",
    "transient_unavailable",
    "unknown_tool",
)
MAX_TEXT = 500
ZIP = re.compile(r"^[0-9]{5}$")
ADDRESS_FIELDS = ("street", "city", "zip")


class ToolError(Exception):
    """A tool's typed failure. ``injected`` is True when the fault schedule caused it
    (recorded in trajectories for analysis; agents branch on ``code`` only)."""

    def __init__(self, code: str, message: str, injected: bool = False) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.injected = code, message, injected

    def as_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "injected": self.injected}


@dataclass(frozen=True)
class Arg:
    """One argument: ``kind`` is "str", "int" (``low``..``high``) or "address"."""

    kind: str
    required: bool = True
    low: int = 0
    high: int = 0


@dataclass(frozen=True)
class ToolSpec:
    args: dict[str, Arg]
    resource: str
    """The argument naming the resource a call targets: the fault-event key."""
    read: bool
    """Read tools can be served stale by the replica."""
    doc: str


_ID = Arg("str")
TOOLS: dict[str, ToolSpec] = {
    "get_user": ToolSpec({"user_id": _ID}, "user_id", True, "A user's record."),
    "find_user_by_email": ToolSpec(
        {"email": Arg("str")}, "email", True, "The user with this primary email (aliases are not indexed)."
    ),
    "search_users": ToolSpec(
        {"query": Arg("str")}, "query", True, "The user whose email, alias or name equals the query."
    ),
    "list_orders": ToolSpec(
        {"user_id": _ID, "page": Arg("int", False, 1, 1000)},
        "user_id",
        True,
        "A page of 5 of the user's orders, oldest first, and next_page (None on the last).",
    ),
    "get_order": ToolSpec(
        {"order_id": _ID, "cursor": Arg("int", False, 0, 1000)},
        "order_id",
        True,
        "An order with items, status and totals (suite version 3: 2 items a call from cursor, and next_cursor).",
    ),
    "cancel_order": ToolSpec(
        {"order_id": _ID, "reason": Arg("str")}, "order_id", False, "Cancel a placed order."
    ),
    "refund_order": ToolSpec(
        {"order_id": _ID, "reason": Arg("str"), "product_id": Arg("str", False)},
        "order_id",
        False,
        "Refund a cancelled or delivered order in full, or one line item when product_id is given.",
    ),
    "update_address": ToolSpec(
        {"order_id": _ID, "address": Arg("address")}, "order_id", False, "Change a placed order's shipping address."
    ),
    "apply_coupon": ToolSpec(
        {"order_id": _ID, "code": Arg("str")}, "order_id", False, "Apply a coupon code to a placed order."
    ),
    "get_product": ToolSpec({"product_id": _ID}, "product_id", True, "A product's record."),
    "search_products": ToolSpec(
        {"query": Arg("str")}, "query", True, "Products whose name contains the query (case-insensitive)."
    ),
    "check_inventory": ToolSpec({"product_id": _ID}, "product_id", True, "Units available for a product."),
    "reserve_item": ToolSpec(
        {"user_id": _ID, "product_id": _ID, "qty": Arg("int", True, 1, 50)},
        "product_id",
        False,
        "Reserve units of a product for a user; fails when fewer are available.",
    ),
    "create_ticket": ToolSpec(
        {"user_id": _ID, "subject": Arg("str"), "order_id": Arg("str", False), "product_id": Arg("str", False)},
        "user_id",
        False,
        "Open a support ticket.",
    ),
    "escalate_ticket": ToolSpec(
        {"ticket_id": _ID, "reason": Arg("str", False)}, "ticket_id", False, "Escalate an open ticket to tier 2."
    ),
    "send_message": ToolSpec(
        {"user_id": _ID, "text": Arg("str")}, "user_id", False, "Send the user a message."
    ),
}


def _check_value(tool: str, name: str, arg: Arg, value: Any) -> None:
    """Raise ``invalid_argument`` naming the tool, the argument and what is wrong."""
    where = f"{tool}({name}=...)"
    if arg.kind == "str":
        if not isinstance(value, str) or not value.strip():
            raise ToolError("invalid_argument", f"{where}: expected a non-empty string, got {value!r:.60}")
        if len(value) > MAX_TEXT:
            raise ToolError("invalid_argument", f"{where}: {len(value)} characters; the limit is {MAX_TEXT}")
    elif arg.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError("invalid_argument", f"{where}: expected an integer, got {value!r:.60}")
        if not arg.low <= value <= arg.high:
            raise ToolError("invalid_argument", f"{where}: {value} is outside {arg.low}..{arg.high}")
    else:
        if not isinstance(value, dict) or sorted(value) != sorted(ADDRESS_FIELDS):
            raise ToolError("invalid_argument", f"{where}: expected an object with exactly {list(ADDRESS_FIELDS)}")
        for part in ADDRESS_FIELDS:
            if not isinstance(value[part], str) or not value[part].strip():
                raise ToolError("invalid_argument", f"{where}: {part} must be a non-empty string")
        if not ZIP.match(value["zip"]):
            raise ToolError("invalid_argument", f"{where}: zip must be 5 digits, got {value['zip']!r:.20}")


def validate_args(tool: str, args: Any) -> ToolSpec:
    """The tool's spec once ``args`` passed every check; ToolError otherwise."""
    spec = TOOLS.get(tool)
    if spec is None:
        raise ToolError("unknown_tool", f"no tool {tool!r}; tools: {sorted(TOOLS)}")
    if not isinstance(args, dict):
        raise ToolError("invalid_argument", f"{tool}: arguments must be an object, got {type(args).__name__}")
    unexpected = sorted(set(args) - set(spec.args))
    if unexpected:
        raise ToolError("invalid_argument", f"{tool}: unexpected arguments {unexpected}; it takes {list(spec.args)}")
    for name, arg in spec.args.items():
        if name in args:
            _check_value(tool, name, arg, args[name])
        elif arg.required:
            raise ToolError("invalid_argument", f"{tool}: missing required argument {name!r}")
    return spec
