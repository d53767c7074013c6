"""Pure logic of the medrsi loop: failure priority, clusters, tools as harness edits,
the request-batch stream, trial bookkeeping and the re-test after a stable-set change."""

import json

import pytest

from schemas.rows import DistillateRow
from suites.toolsim.harness import parse_harness
from tasks.gate.slow_registration import FrozenTool, TrialBatch
from tasks.loops.medrsi.medrsi_logic import (
    Failure,
    ToolTrial,
    balanced_success,
    batch_case_ids,
    rank_clusters,
    registration_pass,
    signature,
    stream_order,
    tool_id,
    trial_batches,
    with_tool,
)
from tasks.loops.medrsi.medrsi_stages import latest_status
from tasks.proposers.rule_evidence import Trace

ANCHOR = "v1"


def step(ok: bool, error: str | None = None) -> dict:
    payload = {"result": {}} if error is None else {"error": {"code": error, "message": "x"}}
    return {"step": 0, "kind": "tool_call", "name": "get_order", "args_json": "{}", "result_json": json.dumps(payload),
            "ok": ok}


def test_priority_is_failure_count_times_cost_highest_first():
    failures = [
        Failure("a/001", "a", "error:rate_limited", 2.0), Failure("a/002", "a", "error:rate_limited", 2.0),
        Failure("a/003", "a", "error:rate_limited", 2.0),                      # 3 x 2 = 6
        Failure("b/001", "b", "unmet:order_cancelled", 5.0),                    # 1 x 5 = 5
        Failure("c/001", "c", "broken:wrong_order", 1.0), Failure("c/002", "c", "broken:wrong_order", 3.0),  # 2 x 2
        Failure("d/001", "d", "error:no_match", 10.0),                          # 1 x 10 = 10
        Failure("e/001", "e", "unmet:x", 2.0), Failure("e/002", "e", "unmet:x", 2.0),  # 4: ties c, by id
    ]
    ranked = rank_clusters(failures)
    assert [(c.cluster_id, c.priority) for c in ranked] == [
        ("d:error:no_match", 10.0), ("a:error:rate_limited", 6.0), ("b:unmet:order_cancelled", 5.0),
        ("c:broken:wrong_order", 4.0), ("e:unmet:x", 4.0)]
    assert ranked[1].case_ids == ("a/001", "a/002", "a/003") and ranked[3].mean_cost == 2.0


def test_signature_is_the_ending_error_else_broken_guards_else_unmet_goals():
    ended = Trace("a/0", "a", (step(True), step(False, "rate_limited")), False)
    harmed = Trace("a/1", "a", (step(True),), False, broken=("wrong_order",), unmet=("refund",))
    missed = Trace("a/2", "a", (step(True),), False, unmet=("ticket", "refund"))
    assert [signature(t) for t in (ended, harmed, missed)] == [
        "error:rate_limited", "broken:wrong_order", "unmet:refund,ticket"]


def test_batches_are_consecutive_and_wrap_round_the_stream():
    stream = ["a", "b", "c", "d", "e"]
    assert batch_case_ids(stream, 2, 1) == ["a", "b"]
    assert batch_case_ids(stream, 2, 3) == ["e", "a"]
    assert batch_case_ids(stream, 9, 2) == ["e", "a", "b", "c", "d"]  # starts at 9 mod 5; no case twice
    with pytest.raises(ValueError, match="numbered from 1"):
        batch_case_ids(stream, 2, 0)
    assert stream_order(stream, 7) == stream_order(list(reversed(stream)), 7) != stream_order(stream, 8)


def test_trial_batches_are_the_later_ones_and_at_most_n():
    assert trial_batches(2, 2, 3) == []          # admitted this round: no batch seen yet
    assert trial_batches(2, 3, 3) == [3]
    assert trial_batches(2, 7, 3) == [3, 4, 5]   # later batches are ignored


def test_balanced_success_averages_templates_not_cases():
    metrics = {"a/0": {"success": 1.0}, "a/1": {"success": 0.0}, "b/0": {"success": 1.0}}
    assert balanced_success(metrics, ["a/0", "a/1", "b/0"]) == pytest.approx(0.75)  # plain mean: 2/3


def test_a_tool_composes_with_a_changed_stable_harness():
    rule = {"id": "retry", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
    stable = {"version": 1, "rules": [dict(rule, action={"retry": {"max": 1}})], "skills": []}
    composed = with_tool(stable, "add_rule", rule)
    parse_harness(composed)
    assert [r["id"] for r in composed["rules"]] == ["retry", "retry-2"] and stable["rules"][0]["id"] == "retry"
    skill = {"name": "s", "trigger": {"template": "cancel_latest_order"}, "steps": [{"call": "list_orders"}]}
    replaced = with_tool({"version": 1, "rules": [], "skills": [dict(skill, name="old")]}, "put_skill", skill)
    assert [s["name"] for s in replaced["skills"]] == ["s"]
    assert tool_id("add_rule", rule) == tool_id("add_rule", dict(rule, id="other"))


def trial(code: str, stable: str, gains: list[float], cost_with: float = 1.0) -> ToolTrial:
    batches = tuple(TrialBatch(f"b{i}", 0.5 + g, 0.5, cost_with, 1.0) for i, g in enumerate(gains))
    return ToolTrial(FrozenTool(code, code, "deps", stable), batches, frozenset({ANCHOR}), 0)


def test_an_accept_changes_the_stable_set_and_later_tools_are_re_tested():
    trials = [trial("t1", "s0", [0.1, -0.05, 0.1]), trial("t2", "s0", [0.2, 0.2, 0.2]),
              trial("t3", "s0", [0.1]), trial("t4", "s0", [0.1, 0.1, 0.1], cost_with=1.5)]
    outcomes = registration_pass(trials[:1] + trials[2:] + trials[1:2], "s0", anchored=ANCHOR, n_batches=3,
                                 threshold=0.0)
    (first, base1), (third, base3), (fourth, base4), (second, base2) = outcomes
    # t1: mean gain 0.05 > 0 with 1 of 3 batches worse, cost not increased -> registered
    assert first.decision == "accept" and first.delta == pytest.approx(0.05) and base1 == "s0"
    # every later tool was frozen against s0, but the stable set is now t1: re-test first
    for outcome, base in ((third, base3), (fourth, base4), (second, base2)):
        assert outcome.decision == "trial" and base == "t1" and json.loads(outcome.evidence_json)["retest"]
    alone = registration_pass(trials[2:], "s0", anchored=ANCHOR, n_batches=3, threshold=0.0)
    assert [o.decision for o, _ in alone] == ["trial", "reject"]  # t3: 1 of 3 batches; t4: cost increased
    assert "increased" in alone[1][0].reason


def tool_row(tool: str, round_index: int, status: str) -> DistillateRow:
    return DistillateRow(run_id="r", distillate_id=tool, round=round_index, kind="tool", content="{}", uri=None,
                         source_execution_ids=[], support=1, status=status)


def test_the_latest_status_of_a_tool_is_its_later_round_then_later_lifecycle_step():
    rows = [tool_row("t1", 4, "stable"), tool_row("t1", 1, "experimental"), tool_row("t1", 1, "proposed"),
            tool_row("t2", 2, "retired"), tool_row("t2", 2, "proposed"), tool_row("t3", 3, "experimental"),
            tool_row("t3", 3, "proposed"), tool_row("t4", 5, "retested"), tool_row("t4", 2, "experimental")]
    assert {k: v.status for k, v in latest_status(rows).items()} == {
        "t1": "stable", "t2": "retired", "t3": "experimental", "t4": "retested"}


def test_the_loop_is_registered_and_bad_config_names_the_field():
    from pydantic import ValidationError

    from flows import LOOPS, PROGRESS
    from flows.medrsi import medrsi
    from schemas.admission import MedRSIConfig
    from schemas.configs import RunConfig
    from schemas.loops import LOOP_SPECS

    config = RunConfig(loop="medrsi", suite="toolsim", budget=5)
    assert LOOPS["medrsi"] is medrsi and PROGRESS["medrsi"](config) == 6 and LOOP_SPECS["medrsi"].default_suite == "toolsim"
    assert config.medrsi.trial_batches == 3  # the paper's "3 subsequent patient batches"
    with pytest.raises(ValidationError, match="trial_batches"):
        MedRSIConfig(trial_batches=0)
    with pytest.raises(ValidationError, match="pool_capcity"):
        RunConfig(loop="medrsi", suite="toolsim", budget=1, medrsi={"pool_capcity": 2})
