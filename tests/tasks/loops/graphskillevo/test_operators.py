"""Mutation on real toolsim failures, crossover at a shared node (valid and dangling), toggles, the
operator rotation, batches and top-k selection."""

import random

from suites.toolsim import ToolSim
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness
from tasks.loops.graphskillevo.graph import (
    START,
    compile_harness,
    from_harness,
    invalid_reason,
    node_id,
    seed_skill,
    skill_id,
)
from tasks.loops.graphskillevo.operators import (
    batch_of,
    crossover,
    mutate,
    operator_for,
    select,
    shared_roots,
    swap,
    toggle,
)
from tasks.proposers.rule_evidence import trace_of

CHANGE = "change_address"
S0 = {"call": "find_user_by_email"}
S1 = {"call": "list_orders", "args": {"page": 1}}
GATE = {"var": "tier", "equals": "vip"}
S2 = {"call": "get_user"}
S3 = {"pick": {"from": "orders", "take": "first"}}
S4 = {"call": "update_address", "args": {"address": "$new_address"}}


def _skill(steps, rules=()):
    return from_harness({"version": 1, "rules": list(rules),
                         "skills": [{"name": "s", "trigger": {"template": CHANGE}, "steps": steps}]})


def _traces(skill, template):
    cases = [c for c in ToolSim(instances_per_template=5).cases() if c.payload["template"] == template]
    harness = load_harness(compile_harness(skill))
    return [trace_of(c.case_id, c.payload, run_episode(c.payload, harness)) for c in cases]


def test_mutation_repairs_the_refusal_its_failures_show():
    traces = _traces(seed_skill(), "refund_unshipped_order")
    failures = [t for t in traces if not t.success]
    assert len(failures) == 5  # refund without cancelling first: every case refused
    child = mutate(seed_skill(), "seed", failures, (), random.Random(0))
    assert child.op == "mutate:precondition" and child.parents == ("seed",)
    assert invalid_reason(child.skill) is None
    assert sum(t.success for t in _traces(child.skill, "refund_unshipped_order")) == 4  # one injected fault left


def test_mutation_without_evidence_toggles_a_principle_and_none_without_any():
    rule = {"id": "r", "trigger": {"on_error": "rate_limited"}, "action": {"retry": {"max": 1}}}
    child = mutate(_skill([S0, S1, S3, S4], [rule]), "p", (), (), random.Random(0))
    assert child.op == "mutate:toggle_principle" and child.skill["principles"][0]["on"] is False
    assert compile_harness(child.skill)["rules"] == []
    assert mutate(seed_skill(), "seed", (), (), random.Random(0)) is None
    assert toggle(seed_skill(), random.Random(0)) is None


def test_crossover_swaps_a_template_procedure_and_merges_principles():
    rule = {"id": "r", "trigger": {"on_error": "rate_limited"}, "action": {"retry": {"max": 1}}}
    a, b = seed_skill(), _skill([S0, S1, S3, S4], [rule])
    roots = shared_roots(a, b)
    assert (START, CHANGE) in roots
    child = crossover(a, "a", b, "b", random.Random(0))
    assert child.parents == ("a", "b") and invalid_reason(child.skill) is None
    document = compile_harness(child.skill)
    assert document["rules"] == [rule]
    assert crossover(a, "a", a, "a", random.Random(0)) is None


def test_swap_below_a_gated_step_leaves_a_dangling_skip_edge():
    a = _skill([S0, {**S1, "when": GATE}, S2, S4])
    b = _skill([S0, {**S1, "when": GATE}, S3, S4])
    gated = node_id(CHANGE, S1, 0)
    assert (gated, CHANGE) in shared_roots(a, b)
    child = swap(a, b, gated, CHANGE)
    assert invalid_reason(child).startswith(f"dangling edge {node_id(CHANGE, S0, 0)} -> {node_id(CHANGE, S2, 0)}")
    at_first = swap(a, b, node_id(CHANGE, S0, 0), CHANGE)  # the whole tail: no edge left behind
    assert invalid_reason(at_first) is None
    assert compile_harness(at_first)["skills"][0]["steps"] == [S0, {**S1, "when": GATE}, S3, S4]


def test_rotation_batches_and_selection():
    ops = ("mutate", "crossover")
    assert [operator_for(1, s, ops, 4) for s in range(4)] == ["crossover", "mutate", "crossover", "mutate"]
    assert operator_for(1, 0, ops, 1) == "mutate"
    assert operator_for(2, 0, ("mutate",), 4) == "mutate"
    stream = ["a", "b", "c", "d", "e"]
    assert batch_of(stream, 1, 3) == ["a", "b", "c"] and batch_of(stream, 2, 3) == ["d", "e", "a"]
    assert batch_of(stream, 1, 9) == stream and batch_of([], 1, 3) == []
    pool = [("x", 0.5, 0), ("y", 0.75, 2), ("z", 0.5, 1), ("w", 0.75, 1)]
    assert select(pool, 3) == ["w", "y", "x"]


def test_mutation_skips_repairs_that_recreate_a_known_skill():
    traces = _traces(seed_skill(), "cancel_latest_order") + _traces(seed_skill(), "refund_unshipped_order")
    failures = [t for t in traces if not t.success]
    first = mutate(seed_skill(), "seed", failures, (), random.Random(0))
    second = mutate(seed_skill(), "seed", failures, (), random.Random(0), known={skill_id(first.skill)})
    assert skill_id(second.skill) != skill_id(first.skill) and invalid_reason(second.skill) is None
