import json
import random

import pytest

from suites.toolsim.suite import ToolSim
from tasks.loops.moscopt.edits import EMA, PRIOR, Edit, Failure, Memory, all_at_once, propose, schedule
from tasks.loops.moscopt.gate import decide
from tasks.loops.moscopt.loop import Knobs, Outcome, mean_success, run_round, toolsim_simulator
from tasks.loops.moscopt.pool import State, bundle_id, summarised

RETRY = {"id": "r1", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
PAGE = {"id": "p1", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 5}}}
CATALOGUE = {"rules": [RETRY, PAGE], "plans": []}


def bundle(name, rules=()):
    return summarised({"name": name, "summary": "", "rules": list(rules), "skills": []})


A, B, C = bundle("a", [RETRY]), bundle("b", [PAGE]), bundle("c")
IA, IB, IC = bundle_id(A), bundle_id(B), bundle_id(C)


def test_schedule_interleaves_stages_with_a_period_for_stage_three():
    assert [schedule(r, 3, False) for r in range(1, 7)] == [1, 2, 3, 2, 1, 3]
    assert [schedule(r, 3, True) for r in range(1, 7)] == [1, 1, 3, 1, 1, 3]
    assert [schedule(r, 0, False) for r in range(1, 4)] == [1, 2, 1]


def test_memory_is_a_tabu_list_plus_operator_ema():
    memory, state = Memory(), State.of([A])
    edit = Edit(1, "add_rule", IA, "", state)
    memory.record(edit, False)
    assert edit.key in memory.rejected
    assert memory.experience["add_rule"] == pytest.approx((1 - EMA) * PRIOR)
    memory.record(edit, True)
    assert memory.experience["add_rule"] == pytest.approx((1 - EMA) ** 2 * PRIOR + EMA)


def test_gating_edit_promotes_a_skill_g_did_not_load():
    state = State.of([A, B], {"t": {IA: 1.0}})
    failures = [Failure("t/000", "t", (IA,))]
    memory = Memory(experience={"demote": -1.0})  # weight floor 0.05: promote is drawn almost always
    for seed in range(20):
        edit = propose(2, state, memory, failures, CATALOGUE, {}, 1, 8, random.Random(seed))
        if edit.operator == "promote":
            break
    assert edit.target == f"t:{IB}" and edit.state.gating["t"][IB] == 2.0
    assert edit.state.loaded("t", 1) == [IB] and list(edit.state.pool) == [IA, IB]


def test_tabu_edits_are_not_proposed_again():
    state = State.of([A, B], {"t": {IA: 1.0}})
    failures = [Failure("t/000", "t", (IA,))]
    memory = Memory()
    seen = set()
    for seed in range(3):  # stage 2 on one failure: promote b or demote a, both reject-able
        edit = propose(2, state, memory, failures, CATALOGUE, {}, 1, 8, random.Random(seed))
        if edit is None:
            break
        assert edit.key not in seen
        seen.add(edit.key)
        memory.record(edit, False)
    assert propose(2, state, memory, failures, CATALOGUE, {}, 1, 8, random.Random(9)) is None


def test_pool_edit_eliminates_the_lowest_success_rate():
    state = State.of([A, B, C])
    stats = {IA: (4, 4), IB: (4, 0), IC: (0, 0)}  # rates 5/6, 1/6, 1/2
    memory = Memory(experience={"combine": -1.0, "breed": -1.0})
    edit = next(e for s in range(30) if (e := propose(3, state, memory, [], CATALOGUE, stats, 2, 8,
                                                      random.Random(s))).operator == "eliminate")
    assert edit.target == IB and list(edit.state.pool) == [IA, IC]


def test_skill_edit_touches_a_skill_loaded_on_a_failure():
    state = State.of([A, B])
    for seed in range(10):
        edit = propose(1, state, Memory(), [Failure("t/0", "t", (IB,))], CATALOGUE, {}, 1, 8, random.Random(seed))
        assert edit.target == IB and IA in edit.state.pool and edit.parents == (IB,)


def test_combine_and_breed_record_both_parents():
    state = State.of([A, B], {"t": {IA: 3.0}})
    memory = Memory(experience={"eliminate": -1.0})
    edit = next(e for s in range(30) if (e := propose(3, state, memory, [], CATALOGUE, {}, 1, 8,
                                                      random.Random(s))).operator == "combine")
    assert set(edit.parents) == {IA, IB} and edit.target in edit.state.pool
    assert edit.state.pool[edit.target]["rules"] in ([RETRY, PAGE], [PAGE, RETRY])
    assert edit.state.gating["t"][edit.target] == 3.0


def test_all_at_once_applies_one_edit_per_stage():
    state = State.of([A, B, C], {"t": {IA: 1.0}})
    edit = all_at_once(state, Memory(), [Failure("t/0", "t", (IA,))], CATALOGUE, {}, 1, 8, random.Random(0))
    assert edit.stage == 0 and len(edit.operator.split("+")) == 3


def test_gate_accepts_only_when_validation_improves():
    before, after = {"x": 0.0, "y": 1.0, "z": 0.0}, {"x": 1.0, "y": 1.0, "z": 0.0}
    accepted = decide(before, after, {"stage": 1}, 0.0, seed=0)
    assert accepted.decision == "accept" and accepted.delta == pytest.approx(1 / 3)
    assert accepted.improved_cases == ["x"] and json.loads(accepted.evidence_json)["stage"] == 1
    assert decide(before, dict(before), {"stage": 2}, 0.0, seed=0).decision == "reject"
    assert decide(before, after, {}, 0.5, seed=0).decision == "reject"


def _loads_b_simulator(state, split):
    """Success iff skill b is loaded: the true credit the gate must find."""
    cases = ["t/000", "t/001"] if split == "select" else ["t/002"]
    return [Outcome(c, "t", tuple(state.loaded("t", 1)), float(IB in state.loaded("t", 1))) for c in cases]


def test_run_round_accepts_a_gating_edit_that_loads_the_right_skill():
    state, memory = State.of([A, B], {"t": {IA: 1.0}}), Memory(experience={"demote": -1.0})
    knobs = Knobs(k=1, period=0, max_pool=8)
    first = run_round(1, state, memory, {}, CATALOGUE, knobs, _loads_b_simulator, seed=0)
    assert first.stage == 1 and first.stats == {IA: (1, 0)}
    second = run_round(2, first.state, memory, first.stats, CATALOGUE, knobs, _loads_b_simulator, seed=1)
    assert second.stage == 2 and second.outcome.decision == "accept"
    assert second.state.loaded("t", 1) == [IB] and mean_success(second.after) == 1.0


def test_toolsim_simulator_runs_every_case_of_the_split_under_the_loaded_skills():
    cases = ToolSim(version=2, instances_per_template=2).cases()
    simulate = toolsim_simulator(cases, 1)
    state = State.of([A, B], {"apply_coupon": {IB: 1.0}})
    outcomes = simulate(state, "select")
    assert len(outcomes) == 8 and {o.template for o in outcomes} == {c.payload["template"] for c in cases}
    assert next(o for o in outcomes if o.template == "apply_coupon").loaded == (IB,)
    assert all(o.success in (0.0, 1.0) for o in outcomes) and simulate(state, "select") == outcomes
