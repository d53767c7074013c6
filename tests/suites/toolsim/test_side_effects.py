"""Suite version 2's side effects on hand-built requests (conftest's world): lost
acknowledgements on non-idempotent writes, per-tool quotas that retries use up, and
loaded skills for other templates that shrink the step budget."""

import pytest

from suites.toolsim.agent import Agent
from suites.toolsim.backend import Backend
from suites.toolsim.episode import step_budget
from suites.toolsim.faults import CALL_QUOTA, FaultSchedule
from suites.toolsim.harness import load_harness
from suites.toolsim.seeding import unit_interval
from suites.toolsim.suite import ToolSim
from suites.toolsim.tools import ToolError

from .conftest import build_world

LINE = {"order_id": "o0006", "reason": "damaged", "product_id": "p01"}


def test_a_lost_ack_write_is_applied_and_reported_as_transient(scripted):
    backend = scripted({("refund_order", "o0006", 0): "lost_ack"}, True)
    with pytest.raises(ToolError) as err:
        backend.call("refund_order", dict(LINE))
    assert (err.value.code, err.value.injected) == ("transient_unavailable", True)
    assert [(r.refund_id, r.amount) for r in backend.world.refunds] == [("r0001", 1000)]


def test_a_retried_line_refund_refunds_twice(scripted):
    """o0006 totals 1000 + 2 x 2500 = 6000: a second 1000 still fits under it."""
    backend = scripted({("refund_order", "o0006", 0): "lost_ack"}, True)
    with pytest.raises(ToolError):
        backend.call("refund_order", dict(LINE))
    assert backend.call("refund_order", dict(LINE))["refund_id"] == "r0002"
    assert backend.world.refunded("o0006") == 2000


def test_a_retried_reservation_reserves_twice(scripted):
    backend = scripted({("reserve_item", "p01", 0): "lost_ack"}, True)
    args = {"user_id": "u01", "product_id": "p01", "qty": 1}
    with pytest.raises(ToolError):
        backend.call("reserve_item", dict(args))
    backend.call("reserve_item", dict(args))
    assert [r.qty for r in backend.world.reservations] == [1, 1]
    assert backend.world.inventory["p01"] == 1


def test_writes_draw_lost_ack_only_under_version_2():
    """The draw of this event (noise seed 14) is 0.9302..., past transient (0.5) and rate_limited (0.2)
    at fault_rate 1: a read is served stale, a version-1 write goes through, a version-2
    write loses its acknowledgement."""
    draw = unit_interval(14, "fault", "refund_order", "o0006", 0)
    assert 0.7 <= draw < 1.0
    assert FaultSchedule(14, 1.0).fault("refund_order", "o0006", 0, read=False) is None
    assert FaultSchedule(14, 1.0, True).fault("refund_order", "o0006", 0, read=False) == "lost_ack"
    assert FaultSchedule(14, 1.0, True).fault("refund_order", "o0006", 0, read=True) == "stale"


def test_the_quota_stops_a_tool_after_call_quota_calls():
    backend = Backend(build_world(), FaultSchedule(0, 0.0, True))
    for _ in range(CALL_QUOTA):
        backend.call("get_order", {"order_id": "o0001"})
    with pytest.raises(ToolError) as err:
        backend.call("get_order", {"order_id": "o0002"})
    assert (err.value.code, err.value.injected) == ("rate_limited", False)
    assert backend.call("get_user", {"user_id": "u01"})["user_id"] == "u01"
    assert len(backend.events) == CALL_QUOTA + 1  # the refused call drew no event
    plain = Backend(build_world(), FaultSchedule(0, 0.0))
    for _ in range(CALL_QUOTA + 1):
        plain.call("get_order", {"order_id": "o0001"})


def test_blocked_retries_use_the_quota_up(scripted):
    """A rate-limited get_order blocks the tool for 2 ticks; five immediate retries hit
    the block (calls 2..6) and the seventh call, after the block, finds the quota used."""
    backend = scripted({("get_order", "o0001", 0): "rate_limited"}, True)
    codes = []
    for _ in range(CALL_QUOTA + 1):
        try:
            backend.call("get_order", {"order_id": "o0001"})
            codes.append("ok")
        except ToolError as err:
            codes.append(err.code)
    assert codes == ["rate_limited", "rate_limited", "rate_limited", "ok", "ok", "ok", "rate_limited"]


RETRY_ANY = {"id": "retry-any", "trigger": {"on_error": "transient_unavailable", "tool": "*"},
             "action": {"retry": {"max": 2}}}
REFUND_LINE = {"name": "refund-line", "trigger": {"template": "refund_damaged_item"},
               "steps": [{"call": "get_order"},
                         {"call": "refund_order", "args": {"reason": "damaged", "product_id": "p01"}}]}


def _refund(rules, scripted):
    backend = scripted({("refund_order", "o0006", 0): "lost_ack"}, True)
    agent = Agent(backend, load_harness({"version": 1, "rules": rules, "skills": [REFUND_LINE]}), 40)
    status = agent.run("refund_damaged_item", {"order_id": "o0006", "product_name": "Desk Lamp"})
    return status, backend.world.refunded("o0006"), [s["name"] for s in agent.steps]


def test_a_retry_rule_for_flaky_reads_double_refunds(scripted):
    """Without the rule the plan gives up with the line refunded once (1000, served);
    with a catch-all retry it 'recovers' and refunds the line twice (2000: over-refund)."""
    assert _refund([], scripted) == ("gave_up", 1000, ["get_order", "refund_order"])
    assert _refund([RETRY_ANY], scripted) == ("completed", 2000, ["get_order", "refund_order", "refund_order"])


def test_skills_for_other_templates_shrink_the_step_budget():
    skills = [{**REFUND_LINE, "name": f"s{i}", "trigger": {"template": t}}
              for i, t in enumerate(("refund_damaged_item", "open_ticket", "apply_coupon"))]
    harness = load_harness({"version": 1, "skills": skills})
    payload = {"template": "refund_damaged_item", "max_steps": 40}
    assert step_budget(payload, harness) == 40
    assert step_budget({**payload, "version": 2}, harness) == 40 - 2 * 2
    assert step_budget({**payload, "version": 2, "max_steps": 3}, harness) == 1
    assert step_budget({**payload, "version": 2, "template": "reserve_stock"}, harness) == 40 - 3 * 2


def test_version_2_cases_carry_it_and_version_1_cases_are_unchanged():
    old, new = ToolSim(instances_per_template=1).cases(), ToolSim(instances_per_template=1, version=2).cases()
    assert "version" not in old[0].payload
    assert new[0].payload == {**old[0].payload, "version": 2}
    assert ToolSim(version=3).cases()[0].payload == {**old[0].payload, "version": 3}
    with pytest.raises(ValueError, match="version must be 1, 2 or 3"):
        ToolSim(version=4)


def test_the_scorer_sees_a_retried_reservation_as_harm():
    """Suite seed 1, reserve_stock/009 (test split): the reservation's acknowledgement is
    lost under version 2. The seed plan reserves once either way (served); a catch-all
    retry serves it under version 1 but reserves twice under version 2: a broken guard,
    cost 2 x severity 2, one more tool call."""
    retry = {"harness": {"version": 1, "rules": [RETRY_ANY]}}
    seed_harness = {"harness": {"version": 1}}
    for version, success, cost, calls in ((1, 1.0, 0.0, 3.0), (2, 0.0, 4.0, 4.0)):
        suite = ToolSim(seed=1, instances_per_template=10, version=version)
        case = next(c for c in suite.cases() if c.case_id == "reserve_stock/009")
        assert suite.score(case, seed_harness).metrics["success"] == 1.0
        metrics = suite.score(case, retry).metrics
        assert (metrics["success"], metrics["cost"], metrics["tool_calls"]) == (success, cost, calls)
