import json

from schemas.ids import content_id
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness
from suites.toolsim.suite import ToolSim
from tasks.loops.mace.memory import (EMPTY_HARNESS, PRIOR_UTILITY, ROLES, Memory, Unit, add_units, memory_of,
                                     mine_units, pair_key, role_of)
from tasks.proposers.rule_evidence import trace_of


def test_role_of_follows_the_tool_the_trigger_names():
    assert role_of("rule", {"trigger": {"before": "find_user_by_email"}}) == "intake"
    assert role_of("rule", {"trigger": {"before": "list_orders"}}) == "lookup"
    assert role_of("rule", {"trigger": {"on_error": "rate_limited", "tool": "refund_order"}}) == "action"
    assert role_of("rule", {"trigger": {"on_error": "transient_unavailable", "tool": "*"}}) == "action"
    assert role_of("rule", {"trigger": {"on_result": "get_order", "field": "stale", "equals": True}}) == "verify"
    assert role_of("skill", {"trigger": {"template": "t"}, "checks": [{"call": "get_order"}]}) == "verify"
    assert role_of("skill", {"trigger": {"template": "t"}}) == "action"


def seed_traces():
    cases = [c for c in ToolSim(instances_per_template=5).cases() if c.split == "train"]
    harness = load_harness(EMPTY_HARNESS)
    return [trace_of(c.case_id, c.payload, run_episode(c.payload, harness)) for c in cases]


def test_mined_units_are_distinct_parseable_rules_of_the_failed_templates():
    traces = seed_traces()
    units = mine_units(traces)
    failed = {t.template for t in traces if not t.success}
    assert units and len({u.unit_id for u in units}) == len(units)
    for unit in units:
        assert unit.role in ROLES and set(unit.templates) <= failed
        key = "rules" if unit.kind == "rule" else "skills"
        load_harness({**EMPTY_HARNESS, key: [dict(unit.item)]})
    assert mine_units([t for t in traces if t.success]) == []


def unit(uid, role="lookup", templates=("t",)):
    return Unit(uid, role, "rule", {"id": uid, "trigger": {"before": "list_orders"},
                                    "action": {"paginate": {"max_pages": 10}}}, templates, "pages")


def test_memory_id_is_the_sha256_of_its_blob_and_round_trips():
    memory = add_units(Memory(), [unit("a"), unit("b")], max_units=8)
    memory.relations[pair_key("b", "a", "support")] = 0.25
    assert memory.memory_id == content_id(memory.to_bytes())
    again = memory_of(json.loads(memory.to_bytes()))
    assert again.memory_id == memory.memory_id and again.relations == {"a|b|support": 0.25}


def test_add_units_caps_the_memory_and_widens_known_units():
    memory = add_units(Memory(), [unit("a"), unit("b")], max_units=2)
    assert memory.utility == {"a": PRIOR_UTILITY, "b": PRIOR_UTILITY}
    grown = add_units(memory, [unit("c"), unit("a", templates=("u",))], max_units=2)
    assert sorted(grown.units) == ["a", "b"] and grown.units["a"].templates == ("t", "u")
    assert memory.units["a"].templates == ("t",)  # the input is not changed
