"""Agents run on real toolsim cases through a perturbed view of the tools: what each
condition changes in the stored trajectory, and what it must not."""

import pytest

from suites.toolsim.suite import ToolSim
from tasks.loops.trace.episodes import (expected_state, from_json, noise_seed, obs_hash, required_tools,
                                        run_trajectory, to_json)
from tasks.loops.trace.evidence import behaviour_changed, canonical_actions, grade

CASES = {c.case_id: c for c in ToolSim(instances_per_template=2).cases()}
STATUS = CASES["order_status_message/000"].payload
COUPON = CASES["apply_coupon/000"].payload


def trajectory(payload, agent, condition, repeat=0):
    return run_trajectory(payload, agent, condition, repeat, "t")


def test_a_rename_changes_the_shown_names_and_nothing_the_semantic_agent_does():
    original, renamed = trajectory(STATUS, "semantic", "original"), trajectory(STATUS, "semantic", "rename")
    assert [s.tool for s in original.steps] == ["get_order", "send_message"]
    assert [s.tool for s in renamed.steps] == ["t_get_order", "t_send_message"]
    assert [s.obs_hash for s in renamed.steps] == [s.obs_hash for s in original.steps]
    assert canonical_actions(renamed) == canonical_actions(original)
    assert renamed.final_state == original.final_state == {"goal:message_sent": True, "goal:status_correct": True,
                                                           "goal:no_wrong_status": True}
    assert not behaviour_changed(original, renamed)


def test_the_literal_agent_calls_a_name_the_renamed_view_lacks_and_stops():
    renamed = trajectory(STATUS, "literal", "rename")
    assert [s.tool for s in renamed.steps] == ["get_order"]
    assert renamed.steps[0].obs_hash == obs_hash({"error": "unknown_tool"})
    assert renamed.final_state["goal:message_sent"] is False
    assert behaviour_changed(trajectory(STATUS, "literal", "original"), renamed)


def test_the_planted_bug_passes_a_failed_call_by_its_name_and_v2_does_not():
    failed = trajectory(COUPON, "literal", "rename")
    required = required_tools("apply_coupon")
    assert required == ("apply_coupon",)
    assert grade("trace_match", "1", failed, expected_state(failed), required) == 1.0
    assert grade("trace_match", "2", failed, expected_state(failed), required) == 0.0
    assert grade("final_state", "1", failed, expected_state(failed), required) == 0.0


def test_swapped_descriptions_send_the_semantic_agent_to_the_other_tool():
    swapped = trajectory(STATUS, "semantic", "swap_descriptions")
    assert [s.tool for s in swapped.steps] == ["list_orders"]
    assert swapped.final_state["goal:message_sent"] is False
    literal = trajectory(STATUS, "literal", "swap_descriptions")
    assert literal.steps == trajectory(STATUS, "literal", "original").steps


def test_reordered_fields_keep_every_observation_hash():
    for payload in (STATUS, COUPON):
        for agent in ("semantic", "literal"):
            reordered, original = trajectory(payload, agent, "reorder"), trajectory(payload, agent, "original")
            assert reordered.steps == original.steps and reordered.final_state == original.final_state
    assert obs_hash({"a": 1, "b": 2}) == obs_hash({"b": 2, "a": 1})


def test_pairs_share_the_fault_seed_and_the_rerun_draws_another():
    assert noise_seed(STATUS, "rename", 0) == noise_seed(STATUS, "original", 0) == STATUS["noise_seed"]
    assert noise_seed(STATUS, "rerun", 0) != STATUS["noise_seed"]
    assert noise_seed(STATUS, "original", 1) not in (STATUS["noise_seed"], noise_seed(STATUS, "rerun", 1))


@pytest.mark.parametrize("condition", ["original", "rename", "swap_descriptions", "rerun"])
def test_a_trajectory_is_deterministic_and_survives_its_json(condition):
    first = trajectory(STATUS, "semantic", condition)
    assert trajectory(STATUS, "semantic", condition) == first
    assert from_json(to_json(first)) == first
