from suites.toolsim.episode import step_budget
from suites.toolsim.harness import parse_harness
from tasks.loops.moscopt.pool import (
    State, bundle_id, compose, replace_skill, seed_pool, select, summarised, theme_of, update_stats,
)

RETRY = {"id": "r1", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
PAGE = {"id": "p1", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 5}}}
LOOKUP = {"id": "l1", "trigger": {"on_error": "not_found", "tool": "find_user_by_email"},
          "action": {"switch_tool": {"tool": "search_users"}}}
PLAN = {"name": "plan_apply_coupon", "trigger": {"template": "apply_coupon"}, "steps": [{"call": "apply_coupon"}]}
REFUND_PLAN = {"name": "plan_refund", "trigger": {"template": "refund_damaged_item"},
               "steps": [{"call": "get_order"}, {"call": "refund_order"}]}


def bundle(name, rules=(), skills=()):
    return summarised({"name": name, "summary": "", "rules": list(rules), "skills": list(skills)})


def test_theme_of_routes_rules_by_what_they_touch():
    assert theme_of(RETRY) == "retry"
    assert theme_of(PAGE) == "pagination"
    assert theme_of(LOOKUP) == "identity"
    assert theme_of({"trigger": {"on_error": "precondition_failed", "tool": "refund_order"},
                     "action": {"call_first": {"tool": "cancel_order"}}}) == "refund"


def test_seed_pool_groups_by_theme_and_drops_empty_themes():
    pool = seed_pool([RETRY, PAGE, LOOKUP], [PLAN, REFUND_PLAN])
    assert [b["name"] for b in pool] == ["retry", "identity", "pagination", "refund", "misc"]
    assert pool[3]["skills"] == [REFUND_PLAN] and pool[4]["skills"] == [PLAN]
    assert [b["name"] for b in seed_pool([RETRY], [])] == ["retry"]
    assert pool[0]["summary"] == "retry: r1"


def test_bundle_id_is_content_id():
    assert bundle_id(bundle("a", [RETRY])) == bundle_id(bundle("a", [dict(RETRY)]))
    assert bundle_id(bundle("a", [RETRY])) != bundle_id(bundle("a", [PAGE]))


def test_compose_unions_rules_once_and_first_plan_per_template():
    other = {**PLAN, "name": "other", "retries": 1}
    doc = compose([bundle("a", [RETRY], [PLAN]), bundle("b", [{**RETRY, "id": "dup"}, PAGE], [other])])
    assert [r["id"] for r in doc["rules"]] == ["a.r1", "b.p1"]
    assert [s["name"] for s in doc["skills"]] == ["a-plan_apply_coupon"]
    parse_harness(doc)


def test_select_loads_top_k_ties_by_id_unscored_zero():
    gating = {"t": {"b": 2.0, "c": -1.0}}
    assert select(gating, "t", ["a", "b", "c", "d"], 2) == ["b", "a"]
    assert select(gating, "u", ["d", "c", "a"], 2) == ["a", "c"]
    assert select(gating, "t", ["a", "b", "c", "d"], 9) == ["b", "a", "d", "c"]


def test_replace_skill_inherits_g_scores():
    a, b = bundle("a", [RETRY]), bundle("b", [PAGE])
    state = State.of([a, b], {"t": {bundle_id(a): 3.0}})
    new = bundle("a", [RETRY, LOOKUP])
    edited = replace_skill(state, bundle_id(a), new)
    assert list(edited.pool) == [bundle_id(new), bundle_id(b)]
    assert edited.gating["t"][bundle_id(new)] == 3.0
    assert edited.loaded("t", 1) == [bundle_id(new)]
    assert edited.state_id() != state.state_id()


def test_update_stats_shares_the_outcome_among_loaded_skills():
    stats = update_stats({}, ["a", "b"], True)
    stats = update_stats(stats, ["a"], False)
    assert stats == {"a": (2, 1), "b": (1, 1)}


def test_overloading_plans_for_other_templates_costs_steps_under_v2():
    payload = {"template": "refund_damaged_item", "max_steps": 20, "version": 2}
    misc = bundle("misc", [], [PLAN, {**PLAN, "name": "p2", "trigger": {"template": "open_ticket"}}])
    state = State.of([bundle("refund", [], [REFUND_PLAN]), misc], {"refund_damaged_item": {}})
    one = parse_harness(compose([state.pool[bundle_id(bundle("refund", [], [REFUND_PLAN]))]]))
    assert step_budget(payload, one) == 20
    everything = parse_harness(state.document("refund_damaged_item", 2))
    assert step_budget(payload, everything) == 20 - 2 * 2
