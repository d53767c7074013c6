"""Suite version 3: what an observation can hide. Version 2's side effects stay; two
observation effects come on top, so that a harness edit can hide what a later step needs:

- per-tool pagination: ``list_orders`` pages by ``page`` / ``next_page`` (5 orders a
  page, every version); under version 3 ``get_order`` also pages its line items, by
  ``cursor`` / ``next_cursor`` (``ITEMS_PER_PAGE`` items a call, ``cursor`` the index of
  the first). A ``paginate`` rule follows each tool's own protocol; a skill that picks a
  line item from page 1 alone misses the third item of a three-item order.
- truncation: the agent keeps at most ``OBSERVATION_ITEMS`` elements of any list in one
  observation (after a ``paginate`` rule merged its pages), the first ones, and the
  observation says how many it dropped (``truncated``: {field: dropped}). Pages are
  oldest first, so a rule that merges every page of a long order history hides the
  latest order from the pick that needs it: ``cancel_latest_order`` then cancels the 8th
  order, a guard violation, for users with 9-12 orders, where reading page by page and
  keeping the last page (steps with ``when: next_page not_equals null``) still works.

Both are pure functions of the result, so version 3 stays deterministic and event-keyed
(the fault schedule is version 2's).
"""

from __future__ import annotations

from typing import Any

ITEMS_PER_PAGE = 2
OBSERVATION_ITEMS = 8
CURSOR_PAGED = {"get_order": "items"}
"""Tool -> the list field it pages by cursor under version 3."""
PAGING = {"page": "next_page", "cursor": "next_cursor"}
"""A paging argument -> the result field naming the next value to pass."""


def paged(tool: str, args: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as version 3's ``tool`` returns it: a cursor-paged tool answers the
    ``ITEMS_PER_PAGE`` items from ``args["cursor"]`` (0 when absent) and ``next_cursor``
    (None on the last page)."""
    field = CURSOR_PAGED.get(tool)
    if field is None:
        return result
    start = int(args.get("cursor", 0))
    items = result[field]
    more = start + ITEMS_PER_PAGE < len(items)
    return {**result, field: items[start:start + ITEMS_PER_PAGE], "cursor": start,
            "next_cursor": start + ITEMS_PER_PAGE if more else None}


def truncated(result: dict[str, Any], limit: int = OBSERVATION_ITEMS) -> dict[str, Any]:
    """``result`` with every list cut to its first ``limit`` elements, and ``truncated``
    ({field: dropped}) when any was cut; unchanged otherwise."""
    cut = {k: len(v) - limit for k, v in result.items() if isinstance(v, list) and len(v) > limit}
    if not cut:
        return result
    return {**{k: v[:limit] if k in cut else v for k, v in result.items()}, "truncated": cut}


def paging_argument(tool_args: dict[str, Any]) -> str | None:
    """The paging argument a tool takes (``page`` or ``cursor``), or None."""
    return next((name for name in PAGING if name in tool_args), None)
