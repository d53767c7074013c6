"""Suite version 3 (observations.py): per-tool pagination and observation truncation,
on hand-built results, on the hand-built world, and on the suite's own cases."""

import json

import pytest

from suites.toolsim.agent import Agent
from suites.toolsim.backend import Backend
from suites.toolsim.episode import run_episode
from suites.toolsim.faults import FaultSchedule
from suites.toolsim.harness import HarnessError, load_harness
from suites.toolsim.observations import paged, truncated
from suites.toolsim.suite import ToolSim
from suites.toolsim.world import LineItem

ORDER = {"order_id": "o1", "items": [{"n": 1}, {"n": 2}, {"n": 3}], "status": "placed"}
PAGINATE_ORDERS = {"id": "p", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 5}}}
NEXT = {"call": "list_orders", "args": {"page": "$next_page"}, "when": {"var": "next_page", "not_equals": None}}
PAGE_BY_PAGE = {"version": 1, "skills": [{
    "name": "latest", "trigger": {"template": "cancel_latest_order"},
    "steps": [{"call": "find_user_by_email"}, {"call": "list_orders", "args": {"page": 1}}, NEXT, NEXT,
              {"pick": {"from": "orders", "order_by": "created", "take": "last"}},
              {"call": "cancel_order", "args": {"reason": "customer request"}}]}]}


def test_get_order_pages_its_items_by_cursor_and_other_tools_are_untouched():
    assert paged("get_order", {}, ORDER) == {**ORDER, "items": [{"n": 1}, {"n": 2}], "cursor": 0, "next_cursor": 2}
    assert paged("get_order", {"cursor": 2}, ORDER) == {**ORDER, "items": [{"n": 3}], "cursor": 2,
                                                        "next_cursor": None}
    assert paged("list_orders", {"page": 1}, {"orders": [1] * 9}) == {"orders": [1] * 9}


def test_truncation_keeps_the_first_items_and_says_how_many_it_dropped():
    assert truncated({"orders": list(range(12)), "page": 3}) == {"orders": list(range(8)), "page": 3,
                                                                "truncated": {"orders": 4}}
    short = {"orders": list(range(8))}
    assert truncated(short) is short


def test_paginate_follows_each_tools_own_protocol(world):
    world.orders["o0001"].items.extend([LineItem("p02", "Wool Scarf", 1, 2500), LineItem("p03", "Mug", 1, 900)])
    harness = load_harness({"version": 1, "rules": [
        {"trigger": {"before": "get_order"}, "action": {"paginate": {"max_pages": 5}}}]})
    agent = Agent(Backend(world, FaultSchedule(0, 0.0), cursor_paging=True), harness, 40, truncate=True)
    agent.run("order_status_message", {"order_id": "o0001"})
    reads = [json.loads(s["args_json"]) for s in agent.steps if s["name"] == "get_order"]
    assert reads == [{"order_id": "o0001"}, {"order_id": "o0001", "cursor": 2}]
    assert [i["name"] for i in agent.variables["items"]] == [i.name for i in world.orders["o0001"].items]


def test_paginate_needs_a_page_or_cursor_argument():
    load_harness({"version": 1, "rules": [{"trigger": {"before": "get_order"}, "action": {"paginate": {}}}]})
    with pytest.raises(HarnessError, match="no page or cursor argument"):
        load_harness({"version": 1, "rules": [{"trigger": {"before": "cancel_order"}, "action": {"paginate": {}}}]})


def _successes(version, document):
    cases = [c for c in ToolSim(instances_per_template=20, version=version, fault_rate=0.0).cases()
             if c.payload["template"] == "cancel_latest_order"]
    return [run_episode(c.payload, load_harness(document)).evaluation.success for c in cases]


def test_version_3_truncation_turns_a_merging_rule_against_long_histories():
    """The side effect: merging every page helps under version 2 and hides the latest
    order under version 3 (users with 9-12 orders), where page-by-page reading still works."""
    merge = {"version": 1, "rules": [PAGINATE_ORDERS]}
    v2_merge, v3_merge, v3_pages = _successes(2, merge), _successes(3, merge), _successes(3, PAGE_BY_PAGE)
    assert v3_pages == _successes(2, PAGE_BY_PAGE) and sum(v2_merge) == sum(v3_pages)
    assert sum(v3_merge) < sum(v2_merge)
    assert all(p for m, p in zip(v3_merge, v3_pages) if m)  # what merging still solves, pages solve too
    assert sum(_successes(3, {"version": 1})) <= sum(v3_merge)
