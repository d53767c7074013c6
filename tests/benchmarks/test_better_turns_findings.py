"""The Better Turns findings' per-model table and verdicts on hand-built rows."""

from pathlib import Path

import pytest

from schemas.rows import ClosedLoopRow, DecisionRow

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "better_turns_findings.py"


def decision(model, ckpt, conv, kind, ok, exact, sim):
    return DecisionRow(run_id="r", candidate_id="c", model=model, ckpt=ckpt, conv_id=conv, turn=0, kind=kind,
                       ref="", pred="", sim=sim, judge_ok=ok, tool_exact=exact)


def closed(model, ckpt, conv, completed, goal):
    return ClosedLoopRow(run_id="r", candidate_id="c", model=model, ckpt=ckpt, conv_id=conv, execution_id="e",
                         completed=completed, retries=0, status="stopped", goal_ok=goal, policy_ok=True,
                         tool_use_ok=True)


def test_model_rows_pool_turns_per_model_and_average_over_models(bench):
    decisions = [decision("m0", "sft", "c1", "text", True, True, 1.0),
                 decision("m0", "sft", "c1", "tool", True, False, 0.5),
                 decision("m0", "sft", "c2", "tool", False, False, 0.0),
                 decision("m1", "sft", "c1", "tool", True, True, 1.0)]
    runs = [closed("m0", "sft", "c1", True, True), closed("m0", "sft", "c2", False, True),
            closed("m1", "sft", "c1", False, False), closed("m1", "sft", "c2", False, False)]
    rows = {(r["model"], r["ckpt"]): r for r in bench.model_rows(decisions, runs)}
    m0 = rows[("m0", "sft")]
    assert (m0["text_ok"], m0["tool_ok"], m0["strict"], m0["sim_tool"]) == (1.0, 0.5, 0.0, 0.25)
    assert (m0["completed"], m0["holistic"], m0["n"]) == (1, 2, 2)
    average = rows[("average", "sft")]
    assert average["tool_ok"] == 0.75 and average["completed"] == 0.5 and average["holistic"] == 1.0
    assert "| m0 | sft | 100.0% | 50.0% | 0.0% |" in bench.model_table(list(rows.values()))


def gate(delta, low, high, **evidence):
    return {"delta": delta, "ci_low": low, "ci_high": high, "evidence": evidence}


@pytest.mark.parametrize("text_low, floor, expected", [(0.1, 0.05, "reproduced"), (-0.1, 0.05, "partly"),
                                                       (0.1, 0.5, "partly")])
def test_verdicts_need_a_ci_above_zero_outside_the_noise_floor(bench, text_low, floor, expected):
    gates = {"sft-base:L2_judge:text": gate(0.3, text_low, 0.5, inside_floor=0.3 <= floor),
             "sft-base:L2_judge:tool": gate(0.2, 0.1, 0.3, inside_floor=False),
             "turns-vs-workflow:sft": gate(0.3, 0.2, 0.4, turn_success=0.8, completion=0.5, high_sim=0.9,
                                           high_sim_incomplete=["m0/c1"], high_sim_runs=3)}
    text, gap, low = bench.verdicts(gates)
    assert text.split(": ")[1].startswith(expected + " ")
    assert "reproduced; 1 of 3" in gap
    assert low.endswith("not reproduced in magnitude")
