"""ModularRSI's analysis on hand-built traces: outcome groups, the first divergent
event, its type and module, recurring findings."""

import json

from tasks.loops.modular_rsi.contrast import Defect, diagnose, event_at, findings, first_divergence, groups
from tasks.proposers.rule_evidence import Trace


def call(name, result=None, error=None):
    payload = {"error": {"code": error, "message": "", "injected": True}} if error else {"result": result or {}}
    return {"step": 0, "kind": "tool_call", "name": name, "args_json": "{}", "result_json": json.dumps(payload),
            "ok": error is None, "reward": None, "logprob": None, "teacher_logprob": None}


def trace(case_id, steps, success):
    return Trace(case_id=case_id, template=case_id.split("/")[0], steps=tuple(steps), success=success)


WIN = trace("t/0", [call("get_user"), call("list_orders"), call("cancel_order")], True)
LOSS = trace("t/1", [call("get_user"), call("list_orders", error="transient_unavailable")], False)


def test_groups_name_the_outcome_mix_per_task():
    rollouts = {"b": [WIN, LOSS], "a": [LOSS, LOSS], "c": [WIN]}
    assert [(g.task_id, g.n_succ, g.n_fail, g.mode) for g in groups(rollouts)] == [
        ("a", 0, 2, "no_success"), ("b", 1, 1, "mixed"), ("c", 1, 0, "all_success")]


def test_first_divergence_is_the_first_step_whose_event_differs():
    assert first_divergence(WIN, LOSS) == 1
    prefix = trace("t/2", [call("get_user")], False)
    assert first_divergence(WIN, prefix) == 1  # a prefix diverges where it stops
    assert first_divergence(WIN, WIN) is None
    other_args = trace("t/3", [call("get_user", {"user_id": "u9"}), call("list_orders"), call("cancel_order")], False)
    assert first_divergence(WIN, other_args) is None  # same events; the goal, not a step, differs


def test_event_types_route_to_their_module():
    assert event_at(LOSS, 1) == "tool_error"
    stale = trace("t/4", [call("get_order", {"stale": True})], False)
    assert event_at(stale, 0) == "stale_read"
    paged = trace("t/5", [call("list_orders", {"orders": [], "next_page": 2})], False)
    assert event_at(paged, 0) == "unread_page"
    unbound = trace("t/6", [call("refund_order", error="unbound_variable")], False)
    assert event_at(unbound, 0) == "missing_context"
    pick = {**call("orders"), "kind": "pick", "ok": False}
    assert event_at(trace("t/9", [call("list_orders", {"orders": []}), pick], False), 1) == "missing_context"
    assert event_at(trace("t/9", [call("list_orders", {"orders": [], "next_page": 2}), pick], False), 1) == "unread_page"
    assert event_at(WIN, 3) == "goal_unmet"
    assert event_at(WIN, 3, max_steps=3) == "step_budget"


def test_diagnose_by_outcome_mix():
    assert diagnose("t", [WIN, LOSS]) == Defect("t", "tool_error", "tool_wrapper", 1)
    unbound = trace("t/6", [call("get_user"), call("refund_order", error="unbound_variable")], False)
    assert diagnose("t", [unbound]) == Defect("t", "missing_context", "context", 1)  # one-sided: where it ended
    done = trace("t/7", [call("get_user")], False)
    assert diagnose("t", [done]) == Defect("t", "goal_unmet", "completion", None)
    slow = trace("t/8", [call("get_user"), call("get_user"), call("list_orders"), call("cancel_order")], True)
    assert diagnose("t", [WIN, slow]) == Defect("t", "inefficient", "tool_wrapper", None)
    assert diagnose("t", [WIN, WIN]) is None


def test_findings_keep_recurring_defects_most_supported_first():
    defects = [Defect("a", "tool_error", "tool_wrapper", 1), Defect("b", "tool_error", "tool_wrapper", 2),
               Defect("c", "tool_error", "tool_wrapper", 0), Defect("a", "goal_unmet", "completion", None),
               Defect("d", "goal_unmet", "completion", None), Defect("e", "stale_read", "observation", 0)]
    found = findings(defects, min_support=2)
    assert [(f.module, f.event, f.support_task_ids) for f in found] == [
        ("tool_wrapper", "tool_error", ("a", "b", "c")), ("completion", "goal_unmet", ("a", "d"))]
    assert found[0].text == "tool_error recurs in 3 tasks; routed to tool_wrapper"
    assert len({f.finding_id for f in found}) == 2 and len(found[0].finding_id) == 64
    assert len(findings(defects, min_support=1)) == 3
