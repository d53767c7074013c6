"""Graders, behaviour diff and verdicts on hand-built trajectories."""

import pytest

from tasks.loops.trace.evidence import (Pair, Step, Trajectory, behaviour_changed, flip_rate, grade, verdict,
                                         verdicts)
from tasks.loops.trace.perturb import resolve, view

PLAN = ("get_order", "cancel_order")
EXPECTED = {"o1": "cancelled"}
EFFECT = {"cancel_order": "cancelled", "refund_order": "refunded"}


def run(agent: str, condition: str, task: str = "t0") -> Trajectory:
    """A trajectory of ``agent`` on the cancel task under ``condition``: each call is the
    agent's real tool choice; a call the view does not have fails (obs 'unknown_tool')."""
    shown, steps, state = view(condition), [], {}
    for intent in PLAN:
        name = resolve(agent, intent, shown)
        tool = shown.canonical(name)
        steps.append(Step(name, (("order_id", "o1"),), tool or "unknown_tool"))
        if tool in EFFECT:
            state["o1"] = EFFECT[tool]
    return Trajectory(task, condition, tuple(steps), state)


def pairs(agent: str, condition: str, grader: str, tasks: int = 4) -> list[Pair]:
    out = []
    for i in range(tasks):
        a, b = run(agent, "original", f"t{i}"), run(agent, condition, f"t{i}")
        fixed = "2" if grader == "trace_match" else "1"
        out.append(Pair(f"t{i}", grade(grader, "1", a, EXPECTED, PLAN), grade(grader, "1", b, EXPECTED, PLAN),
                        behaviour_changed(a, b), grade(grader, fixed, a, EXPECTED, PLAN),
                        grade(grader, fixed, b, EXPECTED, PLAN)))
    return out


def test_trace_matcher_v1_fails_a_rename_that_v2_and_the_state_checker_pass():
    renamed = run("semantic", "rename")
    assert [s.tool for s in renamed.steps] == ["t_get_order", "t_cancel_order"]
    assert grade("trace_match", "1", renamed, EXPECTED, PLAN) == 0.0
    assert grade("trace_match", "2", renamed, EXPECTED, PLAN) == 1.0
    assert grade("final_state", "1", renamed, EXPECTED, PLAN) == 1.0
    assert not behaviour_changed(run("semantic", "original"), renamed)


def test_rename_on_the_literal_name_grader_is_a_grader_artifact_for_the_semantic_agent():
    found = verdict(pairs("semantic", "rename", "trace_match"), flips=0.0, rerun_changed=0.0)
    assert found.delta == -1.0 and found.ci == (-1.0, -1.0)
    assert found.behaviour_changed == 0.0 and found.rescore_delta == 0.0 and found.rescore_ci == (0.0, 0.0)
    assert found.verdict == "grader artifact"


def test_the_same_rename_is_a_real_failure_of_the_literal_agent():
    found = verdict(pairs("literal", "rename", "final_state"), flips=0.0, rerun_changed=0.0)
    assert found.delta == -1.0 and found.behaviour_changed == 1.0
    assert found.verdict == "behaviour effect"


def test_the_positive_control_is_detected():
    swapped = run("semantic", "swap_descriptions")
    assert swapped.final_state == {"o1": "refunded"}
    found = verdict(pairs("semantic", "swap_descriptions", "final_state"), flips=0.25, rerun_changed=0.25)
    assert found.delta == -1.0 and found.behaviour_changed == 1.0 and found.verdict == "behaviour effect"


def test_reordered_fields_change_nothing_for_either_agent():
    for agent in ("semantic", "literal"):
        assert verdict(pairs(agent, "reorder", "final_state"), flips=0.0, rerun_changed=0.0).verdict == "no effect"


def test_a_drop_the_fixed_grader_keeps_without_behaviour_change_is_inconclusive():
    drop = [Pair(f"t{i}", 1.0, 0.0 if i < 2 else 1.0, False, 1.0, 0.0 if i < 2 else 1.0) for i in range(4)]
    found = verdict(drop, flips=0.0, rerun_changed=0.0)
    assert found.delta == -0.5 and found.rescore_delta == -0.5 and found.verdict == "inconclusive"


def test_a_behaviour_change_inside_the_rerun_flip_rate_is_inconclusive():
    noisy = [Pair(f"t{i}", 1.0, 0.0 if i == 0 else 1.0, i == 0, 1.0, 0.0 if i == 0 else 1.0) for i in range(4)]
    assert verdict(noisy, flips=0.5, rerun_changed=0.0).verdict == "inconclusive"


def test_flip_rate_counts_tasks_whose_outcome_differs():
    assert flip_rate({"a": 1, "b": 0, "c": 1, "d": 1}, {"a": 1, "b": 1, "c": 1, "d": 0}) == 0.5
    assert flip_rate({}, {}) == 0.0


def test_unknown_grader_version_is_named():
    with pytest.raises(ValueError, match="no grader final_state v2; known: final_state v1, trace_match v1"):
        grade("final_state", "2", run("semantic", "original"), EXPECTED, PLAN)


def test_the_grid_of_verdicts_with_a_noisy_rerun():
    """Four tasks; in the rerun one task's cancel failed (an event-keyed fault): the
    semantic agent's noise floor is 1/4 flipped, 1/4 changed behaviour."""
    tasks = [f"t{i}" for i in range(4)]
    runs = {(agent, c): {t: run(agent, c, t) for t in tasks}
            for agent in ("semantic", "literal") for c in ("original", "rename", "reorder", "swap_descriptions", "rerun")}
    faulted = runs[("semantic", "rerun")]["t0"]
    runs[("semantic", "rerun")]["t0"] = Trajectory("t0", "rerun", faulted.steps[:1]
                                                   + (Step("cancel_order", (("order_id", "o1"),), "transient"),), {})
    expected, required = {t: EXPECTED for t in tasks}, {t: PLAN for t in tasks}
    trace = verdicts(runs, "trace_match", expected, required)
    state = verdicts(runs, "final_state", expected, required)
    assert trace[("semantic", "rename")].verdict == "grader artifact"
    assert trace[("semantic", "rename")].flip_rate == 0.0
    assert state[("semantic", "rerun")].flip_rate == 0.25 and state[("semantic", "rerun")].delta == -0.25
    assert state[("semantic", "rerun")].verdict == "inconclusive"
    assert state[("semantic", "swap_descriptions")].verdict == "behaviour effect"
    assert state[("semantic", "rename")].verdict == "no effect"
    assert state[("literal", "rename")].verdict == "behaviour effect"
    assert state[("literal", "swap_descriptions")].verdict == "no effect"
    assert sorted(state) == [(a, c) for a in ("literal", "semantic") for c in ("rename", "reorder", "rerun",
                                                                                "swap_descriptions")]
