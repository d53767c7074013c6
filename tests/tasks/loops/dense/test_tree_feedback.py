"""DENSE's tree, feedback methods and receiver on hand-built trajectories (and one real
toolsim episode): subgoals from the plan, closure only by a later success of the same
subgoal, a child's recovery never completing its parent, and what each method lets the
receiver do."""

import json

from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness, parse_harness
from suites.toolsim.suite import ToolSim
from tasks.loops.dense.feedback import feedback_id, flat_summary, raw_dump, render_tree, tokens, unlabelled_feedback
from tasks.loops.dense.receiver import receive, remedy, skill_name, starter_harness
from tasks.loops.dense.tree import assign, build_tree

SKILL = skill_name("change_address")


def step(i, kind, name, ok, via=SKILL, result=None, error=None, args=None):
    payload = {"via": via, **({"error": {"code": error[0], "message": error[1], "injected": False}} if error
                              else {"result": result or {}})}
    return {"step": i, "kind": kind, "name": name, "ok": ok, "args_json": json.dumps(args or {}),
            "result_json": json.dumps(payload)}


NO_MATCH = ("no_match", "no element of $orders matches")
# change_address: a transient lookup retried, then the pick misses on page 1 in both attempts
ADDRESS = [
    step(0, "tool_call", "find_user_by_email", False, error=("transient_unavailable", "try again")),
    step(1, "tool_call", "find_user_by_email", True, via="retry-transient", result={"user_id": "u1"},
         args={"email": "a@x"}),
    step(2, "tool_call", "list_orders", True, result={"orders": [], "next_page": 2}),
    step(3, "pick", "orders", False, error=NO_MATCH),
    step(4, "tool_call", "find_user_by_email", True, result={"user_id": "u1"}, args={"email": "a@x"}),
    step(5, "tool_call", "list_orders", True, result={"orders": [], "next_page": 2}),
    step(6, "pick", "orders", False, error=NO_MATCH),
]


def test_steps_are_assigned_to_plan_subgoals_and_a_restart_re_enters_the_first():
    assert assign("change_address", ADDRESS, SKILL) == [0, 0, 1, 2, 0, 1, 2]


def test_closure_needs_a_later_success_of_the_same_subgoal():
    tree = build_tree("change_address", ADDRESS, SKILL)
    s0, s1, s2, s3 = tree.subgoals
    assert [n.status for n in tree.subgoals] == ["completed", "completed", "open", "unreached"]
    (transient,) = s0.issues
    assert transient.closed and transient.closing_step == 1
    assert [(i.step, i.closed, i.next_page) for i in s2.issues] == [(3, False, 2), (6, False, 2)]
    assert (s0.entries, s0.failures, s2.entries, s2.failures) == (2, 1, 2, 2)
    assert s0.working == {"kind": "tool_call", "name": "find_user_by_email", "args": {"email": "a@x"}}
    # the root re-checks: its children's open issues are its own, and it is not complete
    assert tree.root.status == "open" and [i.step for i in tree.root.issues] == [3, 6]


def test_without_reconciliation_a_later_attempt_closes_and_completes_what_it_did_not_fix():
    tree = build_tree("change_address", ADDRESS, SKILL, reconcile=False)
    s2 = tree.subgoals[2]
    assert s2.status == "completed"  # step 4 (the next attempt's lookup) succeeded after step 3
    assert [(i.step, i.closed, i.closing_step) for i in s2.issues] == [(3, True, 4), (6, False, None)]
    assert tree.root.status == "open" and tree.root.issues == ()  # last step failed; issues not re-checked


def test_a_childs_recovery_does_not_complete_its_parent():
    recovered = ADDRESS[:3]  # s0 recovered, s1 done, the plan stopped there
    strict, lenient = build_tree("change_address", recovered, SKILL), build_tree(
        "change_address", recovered, SKILL, reconcile=False)
    assert strict.root.status == "open"  # s2 and s3 were never reached
    assert lenient.root.status == "completed"  # the last step succeeded


def test_methods_expose_different_things_of_the_same_trajectory():
    tree = build_tree("change_address", ADDRESS, SKILL)
    raw = raw_dump(ADDRESS)
    assert [e["step"] for e in raw["errors"]] == [0, 3, 6] and "next_page" not in raw["errors"][0]
    flat = flat_summary(tree)
    assert len(flat["issues"]) == 3 and "closed" not in flat["issues"][0]
    rendered = render_tree(tree)
    brief, full = rendered["nodes"][0], rendered["nodes"][2]
    assert brief == {"node": "s0", "subgoal": "call find_user_by_email", "status": "completed", "recovered": True,
                     "shortcut": {"kind": "tool_call", "name": "find_user_by_email", "args": {"email": "a@x"}}}
    assert full["entries"] == 2 and [i["closed"] for i in full["issues"]] == [False, False]
    assert tokens({"method": "none"}) == 0 and tokens(rendered) > tokens(raw) > 0
    assert feedback_id(rendered) == feedback_id(json.loads(json.dumps(rendered)))
    assert feedback_id(rendered) != feedback_id(flat)


def test_remedies_come_from_what_an_issue_says():
    pick = {"kind": "pick", "name": "orders", "code": "no_match", "message": "", "next_page": 2}
    assert remedy("change_address", pick)["action"] == {"paginate": {"max_pages": 10}}
    assert remedy("change_address", {**pick, "next_page": None}) is None  # no cursor seen: no reason to page
    refused = {"kind": "tool_call", "name": "refund_order", "code": "precondition_failed",
               "message": "order o1 is placed; a refund needs it to be cancelled or delivered"}
    assert remedy("refund_unshipped_order", refused)["action"] == {"call_first": {"tool": "cancel_order"}}
    short = {"kind": "tool_call", "name": "reserve_item", "code": "precondition_failed",
             "message": "p1: 0 available, 2 requested"}
    assert remedy("reserve_stock", short) is None


def test_the_receiver_puts_open_remedies_first_and_replays_recovered_shortcuts():
    tree_doc = unlabelled_feedback("tree", "change_address", ADDRESS, SKILL)
    harness = receive("change_address", tree_doc)
    parse_harness(harness)
    assert [r["id"] for r in harness["rules"]][:2] == ["fb-paginate-list_orders", "retry-transient"]
    steps = next(s for s in harness["skills"] if s["name"] == SKILL)["steps"]
    assert steps[0] == {"call": "find_user_by_email", "args": {"email": "a@x"}}
    assert steps[1:] == [dict(s) for s in starter_harness()["skills"][3]["steps"][1:]]
    raw_rules = [r["id"] for r in receive("change_address", raw_dump(ADDRESS))["rules"]]
    assert "fb-paginate-list_orders" not in raw_rules  # the dump carries no cursor
    lenient = receive("change_address", unlabelled_feedback("tree_nsr", "change_address", ADDRESS, SKILL))
    assert lenient["rules"][0]["id"] == "retry-transient"  # the ablation believes the pick done
    assert receive("change_address", {"method": "none"}) == starter_harness()


def test_a_real_refusal_is_fixed_by_the_tree_feedback_on_the_same_noise():
    case = next(c for c in ToolSim(instances_per_template=1).cases() if c.case_id == "refund_unshipped_order/000")
    template = case.payload["template"]
    initial = run_episode(case.payload, load_harness(starter_harness()))
    assert not initial.evaluation.success
    assert [s["name"] for s in initial.steps if not s["ok"]] == ["refund_order", "refund_order"]
    doc = unlabelled_feedback("tree", template, initial.steps, skill_name(template))
    retry = run_episode(case.payload, load_harness(receive(template, doc)))
    assert retry.evaluation.success
