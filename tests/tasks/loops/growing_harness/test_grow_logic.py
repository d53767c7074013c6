"""Pure logic of the growing_harness loop on hand-built states: the rolling window, joint
repair, the validation check and its full-state rollback."""

import pytest
from pydantic import ValidationError

from schemas.admission import GrowConfig
from tasks.gate.validation import Checkpoint
from tasks.loops.growing_harness.grow_logic import (
    GrowState,
    admit,
    after_repair,
    check,
    check_due,
    joint_repair,
    loop_state,
    settle,
    state_json,
    state_of,
)
from tasks.proposers.rule_evidence import Trace
from tasks.proposers.rules import RuleProposal


def failing(case_id: str) -> Trace:
    return Trace(case_id=case_id, template=case_id.split("/")[0], steps=(), success=False)


def edit(n: int, triggers: tuple[str, ...]) -> RuleProposal:
    document = {"version": 1, "rules": [{"id": f"r{i}"} for i in range(n)], "skills": []}
    return RuleProposal(document, triggers, f"edit {n}", "retry_on_error", f"k{n}", f"r{n - 1}", len(triggers))


def test_admit_lets_failures_in_until_the_window_is_full_and_passes_successes():
    state = loop_state("h1", ["a/0"], 3, (), {"a/0": 1})
    outcomes = [("b/0", True), ("c/0", False), ("d/0", False), ("e/0", False)]
    after, events = admit(state, outcomes, size=3)
    assert after.window == ("a/0", "c/0", "d/0")
    assert after.cursor == 6  # b, c, d read; e is left for a later fill
    assert dict(after.extra["attempts"]) == {"a/0": 1, "c/0": 0, "d/0": 0}
    assert events == [("b/0", "pass"), ("c/0", "enter"), ("d/0", "enter")]


def test_settle_removes_solved_keeps_unsolved_and_exits_at_the_retry_limit():
    state = loop_state("h1", ["a/0", "b/0", "c/0"], 9, (), {"a/0": 1, "b/0": 0, "c/0": 0})
    window, attempts, events = settle(state, {"b/0"}, retry_limit=2)
    assert window == ["c/0"]
    assert attempts == {"c/0": 1}
    assert events == [("a/0", "exit"), ("b/0", "solved"), ("c/0", "retry")]


def test_a_patch_that_solves_is_kept_and_counts_fixes_one_that_does_not_is_remembered():
    start = loop_state("h1", ["a/0", "b/0"], 5, ("old",), {"a/0": 0, "b/0": 0})
    state = GrowState(start, Checkpoint(start, {"v/0": 0.5}), fixes_since_check=1)
    kept, _ = after_repair(state, "h2", {"a/0", "b/0"}, retry_limit=3)
    assert (kept.current.artifact_id, kept.current.window, kept.fixes_since_check) == ("h2", (), 3)
    assert kept.current.memories == ("old",)
    discarded, _ = after_repair(state, "h3", set(), retry_limit=3)
    assert (discarded.current.artifact_id, discarded.current.window) == ("h1", ("a/0", "b/0"))
    assert discarded.current.memories == ("old", "h3") and discarded.fixes_since_check == 1
    assert dict(discarded.current.extra["attempts"]) == {"a/0": 1, "b/0": 1}
    nothing, _ = after_repair(state, None, set(), retry_limit=1)
    assert nothing.current.window == () and nothing.current.memories == ("old",)


def test_joint_repair_patches_uncovered_failures_in_sequence_up_to_the_batch():
    failures = [failing("a/0"), failing("a/1"), failing("b/0"), failing("c/0")]
    calls = []

    def propose(uncovered, document, excluded):
        calls.append(([t.case_id for t in uncovered], len(document["rules"]), [e.key for e in excluded]))
        group = tuple(t.case_id for t in uncovered if t.template == uncovered[0].template)
        return edit(len(document["rules"]) + 1, group)

    edits = joint_repair({"version": 1, "rules": [], "skills": []}, failures, propose, 2, lambda d: True)
    assert [e.triggers for e in edits] == [("a/0", "a/1"), ("b/0",)]
    assert calls == [(["a/0", "a/1", "b/0", "c/0"], 0, []), (["b/0", "c/0"], 1, ["k1"])]


def test_joint_repair_stops_when_no_edit_is_left_and_trims_patches_already_tried():
    failures = [failing("a/0"), failing("b/0"), failing("c/0")]
    answers = iter([edit(1, ("a/0",)), edit(2, ("b/0",)), None])
    edits = joint_repair({"rules": []}, failures, lambda *_: next(answers), 5, lambda d: len(d["rules"]) != 2)
    assert [e.key for e in edits] == ["k1"]  # stopped at None; the 2-edit patch was tried before
    repeat = iter([edit(1, ("a/0",)), edit(2, ("a/0",))])
    edits = joint_repair({"rules": []}, failures, lambda *_: next(repeat), 5, lambda d: True)
    assert [e.key for e in edits] == ["k1", "k2"]  # an edit covering nothing new ends the patch


def scaffold_state() -> GrowState:
    accepted = loop_state("v1", ["t/1"], 4, ("m1",), {"t/1": 1})
    working = loop_state("v3", ["t/5", "t/6"], 9, ("m1", "m2"), {"t/5": 0, "t/6": 1})
    return GrowState(working, Checkpoint(accepted, {"x": 1.0, "y": 0.0}), fixes_since_check=2)


def test_rollback_restores_harness_window_cursor_memories_and_attempts_together():
    state = scaffold_state()
    after, result = check(state, {"x": 0.0, "y": 0.0}, scorer_versions={"s"}, anchored="s", seed=0, tolerance=0.0)
    assert result.outcome.decision == "rollback"
    assert after.current == state.accepted.state
    assert (after.current.artifact_id, after.current.window, after.current.cursor) == ("v1", ("t/1",), 4)
    assert after.current.memories == ("m1",) and dict(after.current.extra["attempts"]) == {"t/1": 1}
    assert after.accepted == state.accepted and after.fixes_since_check == 0
    assert result.outcome.delta == pytest.approx(-0.5) and result.outcome.regressed_cases == ["x"]


def test_accept_makes_the_working_state_the_last_accepted_and_tolerance_absorbs_small_drops():
    state = scaffold_state()
    after, result = check(state, {"x": 1.0, "y": 1.0}, scorer_versions={"s"}, anchored="s", seed=0, tolerance=0.0)
    assert result.outcome.decision == "accept"
    assert after.current == state.current and after.accepted.state == state.current
    assert after.accepted.score == 1.0 and after.fixes_since_check == 0
    four = GrowState(state.current, Checkpoint(state.accepted.state, {"w": 1.0, "x": 1.0, "y": 1.0, "z": 0.0}), 1)
    dropped = {"w": 1.0, "x": 1.0, "y": 0.0, "z": 0.0}  # 0.5 vs 0.75: a drop of 0.25
    tolerated, result = check(four, dropped, scorer_versions={"s"}, anchored="s", seed=0, tolerance=0.3)
    assert result.outcome.decision == "accept" and tolerated.accepted.score == 0.5
    strict, result = check(four, dropped, scorer_versions={"s"}, anchored="s", seed=0, tolerance=0.2)
    assert result.outcome.decision == "rollback" and strict.current.artifact_id == "v1"


def test_check_is_due_after_gate_every_fixes_and_before_the_final_test_unless_off():
    state = scaffold_state()  # 2 fixes since the last check
    assert check_due(state, gate_every=1, final=False) and check_due(state, gate_every=2, final=False)
    assert not check_due(state, gate_every=8, final=False) and check_due(state, gate_every=8, final=True)
    assert not check_due(state, gate_every=0, final=True)
    unchanged = GrowState(state.accepted.state, state.accepted, 5)
    assert not check_due(unchanged, gate_every=1, final=True)


def test_the_stored_state_round_trips():
    state = scaffold_state()
    assert state_of(state_json(state)) == state


def test_bad_grow_config_names_the_field():
    with pytest.raises(ValidationError, match="gate_every"):
        GrowConfig(gate_every=-1)
    with pytest.raises(ValidationError, match="window_size"):
        GrowConfig(window_size=0)
