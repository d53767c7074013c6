"""The arms shipped with harness_or_model and what one run of an arm records."""

import json

import pytest

from suites.toolsim.harness import load_harness
from tasks.loops.harness_or_model.arms import (arm_names, load_arm, noise_seed, payload_for, run_metrics,
                                               usage_missing, usage_of)


def test_shipped_arms_are_valid_harnesses_that_differ():
    assert {"native", "neutral"} <= set(arm_names())
    native, neutral = load_arm("native"), load_arm("neutral")
    for arm in (native, neutral):
        load_harness(arm.document)  # raises on an invalid document
    assert (native.max_steps, neutral.max_steps) == (6, 40)
    assert native.cache_included and not neutral.cache_included
    assert native.document != neutral.document


def test_unknown_arm_names_the_known_ones():
    with pytest.raises(ValueError, match="known: .*native"):
        load_arm("nope")


def test_seed_zero_is_the_case_own_noise_and_payloads_carry_the_arm_step_limit():
    assert noise_seed(1234, 0) == 1234
    assert noise_seed(1234, 1) != 1234 and noise_seed(1234, 1) == noise_seed(1234, 1)
    payload = {"template": "apply_coupon", "noise_seed": 1234, "max_steps": 40}
    assert payload_for(payload, load_arm("native"), 0) == {**payload, "max_steps": 6}
    assert payload == {"template": "apply_coupon", "noise_seed": 1234, "max_steps": 40}  # not modified


def test_usage_counts_turns_from_the_trajectory():
    arm = load_arm("native")
    prompt = -(-len(json.dumps(arm.document, sort_keys=True)) // 4)
    steps = [{"kind": "tool_call", "args_json": "x" * 8, "result_json": "y" * 40},
             {"kind": "wait", "args_json": "", "result_json": ""},
             {"kind": "check", "args_json": "x" * 3, "result_json": "y" * 5}]
    usage = usage_of(steps, arm)
    assert usage == {"in_tok": 10 + 2 + 2 * prompt, "cached_tok": 2 * prompt, "out_tok": 2 + 4 + 1 + 4}
    assert usage_of(steps, load_arm("neutral"))["in_tok"] == 12  # reports input without the cached prompt


def test_counts_are_kept_apart():
    assert run_metrics("step_limit", True, 6) == {"success": 1.0, "ended_self": 0.0, "hit_limit": 1.0,
                                                  "tool_calls": 6.0}
    assert run_metrics("gave_up", False, 2)["ended_self"] == 1.0


def test_missing_usage_is_seeded_and_near_its_rate():
    draws = [usage_missing(0, "native", f"t/{i}", s, 0.07) for i in range(500) for s in range(2)]
    assert draws == [usage_missing(0, "native", f"t/{i}", s, 0.07) for i in range(500) for s in range(2)]
    assert 0.04 < sum(draws) / len(draws) < 0.10
    assert not any(usage_missing(0, "native", f"t/{i}", 0, 0.0) for i in range(100))
