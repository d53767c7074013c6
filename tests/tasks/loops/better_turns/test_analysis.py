"""Layers apart, SFT − base paired over conversations with the noise floor, and where turns
and workflows disagree, on hand-built rows."""

import math

import pytest

from schemas.rows import ClosedLoopRow, DecisionRow
from tasks.loops.better_turns.analysis import compare_layer, disagreement, layer_values, noise_floor


def decision(model, ckpt, conv, turn, sim, exact, kind="tool"):
    return DecisionRow(run_id="r", candidate_id=f"{model}{ckpt}", model=model, ckpt=ckpt, conv_id=conv, turn=turn,
                       kind=kind, ref="", pred="", sim=sim, judge_ok=exact, tool_exact=exact)


def closed(model, ckpt, conv, completed, goal=True):
    return ClosedLoopRow(run_id="r", candidate_id=f"{model}{ckpt}", model=model, ckpt=ckpt, conv_id=conv,
                         execution_id="e", completed=completed, retries=0, status="stopped", goal_ok=goal,
                         policy_ok=True, tool_use_ok=True)


# base completes c1 with m0 only; sft completes both conversations with both models
CLOSED = [closed("m0", "base", "c1", True), closed("m0", "base", "c2", False), closed("m1", "base", "c1", False),
          closed("m1", "base", "c2", False)] + [closed(m, "sft", c, True) for m in ("m0", "m1") for c in ("c1", "c2")]


def test_completion_delta_is_paired_over_conversations_against_the_seed_floor():
    found = compare_layer("L4_completed", [], CLOSED, resamples=500, seed=0)
    # base per conversation (mean over models): c1 0.5, c2 0 -> 0.25; sft 1.0
    assert (found.base, found.sft, found.delta, found.n_cases) == (0.25, 1.0, 0.75, 2)
    assert found.ci == (0.5, 1.0)  # the two paired differences are 0.5 and 1.0
    assert found.noise_floor == 0.5 and not found.inside_floor  # m0 0.5 vs m1 0.0 on base
    assert found.per_model == {"base": {"m0": 0.5, "m1": 0.0}, "sft": {"m0": 1.0, "m1": 1.0}}


def test_turn_layers_split_text_from_tool_turns_and_one_model_has_no_floor():
    rows = [decision("m0", "base", "c1", 0, 0.5, False), decision("m0", "base", "c1", 1, 1.0, True, "text"),
            decision("m0", "sft", "c1", 0, 1.0, True), decision("m0", "sft", "c1", 1, 1.0, True, "text")]
    assert layer_values("L1_sim:tool", rows, []) == {("base", "m0"): {"c1": 0.5}, ("sft", "m0"): {"c1": 1.0}}
    assert layer_values("L3_exact:text", rows, [])[("base", "m0")] == {"c1": 1.0}
    assert math.isnan(noise_floor(layer_values("L1_sim:tool", rows, []), "sft"))
    found = compare_layer("L1_sim:tool", rows, [], resamples=200, seed=0)
    assert found.delta == 0.5 and math.isnan(found.noise_floor) and not found.inside_floor


def test_disagreement_finds_similar_turns_that_do_not_complete():
    rows = [decision("m0", "sft", "c1", 0, 0.95, True), decision("m0", "sft", "c1", 1, 0.95, False),
            decision("m0", "sft", "c2", 0, 0.5, False), decision("m0", "sft", "c3", 0, 1.0, True)]
    runs = [closed("m0", "sft", "c1", False), closed("m0", "sft", "c2", False, goal=False),
            closed("m0", "sft", "c3", True)]
    found = disagreement("sft", rows, runs, high_sim=0.9, resamples=200, seed=0)
    assert found.high_sim_incomplete == ["m0/c1"] and found.high_sim_runs == 2
    assert found.other_paths == ["m0/c1"]  # reached the goal harmlessly without the reference's calls
    # exact-turn share per conversation 0.5, 0, 1 against completion 0, 0, 1
    assert found.turn_success == pytest.approx(0.5) and found.completion == pytest.approx(1 / 3)
    assert found.gap == pytest.approx(1 / 6)
    # ranks of similarity (0.95, 0.5, 1.0) -> (2, 1, 3); completion (0, 0, 1) -> (1.5, 1.5, 3)
    assert found.rank_agreement == pytest.approx(0.8660254)
