"""The skill graph: harness round trip, the seed, and every validity rule on hand-built graphs."""

import copy

import pytest

from tasks.loops.graphskillevo.graph import (
    START,
    compile_harness,
    from_harness,
    invalid_reason,
    node_id,
    seed_skill,
    skill_id,
)

REFUND = "refund_unshipped_order"
GATED = {"version": 1, "rules": [{"id": "retry", "trigger": {"on_error": "rate_limited"},
                                  "action": {"retry": {"max": 2}}}],
         "skills": [{"name": "x", "trigger": {"template": REFUND}, "retries": 1, "steps": [
             {"call": "get_order"},
             {"call": "cancel_order", "args": {"reason": "refund"}, "when": {"var": "status", "equals": "placed"}},
             {"call": "refund_order", "args": {"reason": "customer request"}}]}]}


def _edges(skill, template):
    ids = {n["id"] for n in skill["graph"]["nodes"] if n["id"].startswith(template + ".")}
    return [e for e in skill["graph"]["edges"] if e["src"] in ids or e.get("template") == template]


def test_seed_graph_compiles_to_the_seed_harness():
    seed = seed_skill()
    assert compile_harness(seed) == {"version": 1, "rules": [], "skills": []}
    assert seed["principles"] == []
    assert len([e for e in seed["graph"]["edges"] if e["src"] == START]) == 8
    assert invalid_reason(seed) is None


def test_gated_step_is_entered_on_a_conditioned_edge_and_skipped_around():
    skill = from_harness(GATED)
    get, cancel, refund = (node_id(REFUND, s, 0) for s in (
        {"call": "get_order"}, {"call": "cancel_order", "args": {"reason": "refund"}},
        {"call": "refund_order", "args": {"reason": "customer request"}}))
    pairs = {(e["src"], e["dst"], "when" in e) for e in _edges(skill, REFUND)}
    assert pairs == {(START, get, False), (get, cancel, True), (get, refund, False), (cancel, refund, False),
                     (refund, "end", False)}
    assert skill["principles"] == [{"id": "retry", "on": True, "rule": {
        "trigger": {"on_error": "rate_limited"}, "action": {"retry": {"max": 2}}}}]


def test_round_trip_keeps_rules_steps_conditions_and_retries():
    document = compile_harness(from_harness(GATED))
    assert document["rules"] == GATED["rules"]
    (skill,) = document["skills"]
    assert skill["steps"] == GATED["skills"][0]["steps"] and skill["retries"] == 1
    assert skill["trigger"] == {"template": REFUND}


def test_a_principle_turned_off_is_not_compiled_and_changes_the_id():
    skill = from_harness(GATED)
    off = copy.deepcopy(skill)
    off["principles"][0]["on"] = False
    assert compile_harness(off)["rules"] == []
    assert skill_id(off) != skill_id(skill) and len(skill_id(off)) == 64


def _broken(edit):
    skill = from_harness(GATED)
    edit(skill, [n["id"] for n in skill["graph"]["nodes"] if n["id"].startswith(REFUND)])
    return invalid_reason(skill)


@pytest.mark.parametrize("edit, reason", [
    (lambda s, ids: s["graph"]["edges"].append({"src": ids[0], "dst": "ghost"}), "dangling edge"),
    (lambda s, ids: s["graph"]["edges"].append({"src": ids[2], "dst": ids[0]}), "cycle through"),
    (lambda s, ids: s["graph"]["edges"].__setitem__(slice(None), [e for e in s["graph"]["edges"]
                                                                  if e["dst"] != "end" or e["src"] != ids[2]]),
     "end is unreachable from the entry of refund_unshipped_order"),
    (lambda s, ids: s["graph"]["edges"].append({"src": START, "dst": ids[0], "template": REFUND}),
     "has 2 start edges"),
    (lambda s, ids: s["graph"]["nodes"].append({"id": "refund_unshipped_order.9.x", "step": {"call": "get_order"}}),
     "is unreachable from start"),
    (lambda s, ids: [e.update(when={"var": "status", "equals": "x"}) for e in s["graph"]["edges"]
                     if e["dst"] == ids[1] and e["src"] == ids[0]], None),
    (lambda s, ids: s["graph"]["nodes"][0]["step"].update(call="no_such_tool"), "compiled harness does not parse"),
    (lambda s, ids: s.pop("principles"), "exactly 'principles' and 'graph'"),
])
def test_invalid_graphs_name_their_reason(edit, reason):
    got = _broken(edit)
    assert (got is None) if reason is None else (reason in got)


def test_two_different_entry_conditions_are_invalid():
    def edit(skill, ids):
        for edge in skill["graph"]["edges"]:
            if edge["dst"] == ids[2]:
                edge["when"] = {"var": "status", "equals": edge["src"]}
    assert "2 different entry conditions" in _broken(edit)
