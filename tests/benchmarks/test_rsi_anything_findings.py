"""The RSI-Anything findings' per-run figures on hand-built rows: the registered best's
hidden score, the online picks' mean gain, accepts without a pair gain, and the pairing
of arms by seed."""

from pathlib import Path

import pytest

from schemas.rows import GateDecisionRow
from schemas.rsi_anything import RSIExecutionRow

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "rsi_anything_findings.py"


def execution(phase: str, gain: float, calls: int, hidden: float | None = None) -> RSIExecutionRow:
    return RSIExecutionRow(run_id="r", round=1, phase=phase, cand_id="c", parent_id="p", online_score=-5.0,
                           parent_score=-5.0 - gain, gain=gain, hidden_score=hidden, test_calls=calls)


def decision(accept: bool, delta: float) -> GateDecisionRow:
    return GateDecisionRow(run_id="r", decision_id=f"d{delta}{accept}", round=1, candidate_id="n", gate="rsi_pair",
                           baseline_id="o", decision="accept" if accept else "reject", reason="", improved_cases=[],
                           regressed_cases=[], select_score=None, baseline_score=None, delta=delta, ci_low=delta,
                           ci_high=delta, n_cases=2, scorer_version="v", evidence_json="{}")


def test_run_metrics(bench):
    rows = [execution("warmup", -5.0, 21), execution("online", 0.2, 21), execution("online", -0.1, 0),
            execution("validate", 0.0, 21), execution("validate", 0.3, 21), execution("final", 0.0, 0, -6.5)]
    m = bench.run_metrics(rows, [decision(True, 0.0), decision(True, 0.4), decision(False, -1.0)])
    assert m["hidden"] == -6.5 and m["pick_gain"] == pytest.approx(0.05)
    assert (m["accepts"], m["bad_accepts"], m["checks"]) == (2.0, 1.0, 3.0)
    assert (m["online_calls"], m["validation_calls"]) == (21.0, 42.0)


def test_rows_pair_the_arms_by_seed(bench):
    def arm(hidden, bad):
        return {"hidden": hidden, "pick_gain": 0.0, "bad_accepts": bad}

    metrics = {s: {"parts": arm(-6.0, 2.0), "pair": arm(-5.5 - s, 0.0), "fixed_wm": arm(-6.0, 0.0),
                   "no_wm": arm(-7.0, 0.0)} for s in (0, 1)}
    out = bench.rows(metrics)
    gate = [r for r in out if r.finding == "pair gate vs accept the parts"]
    assert [(r.a_name, r.b_name) for r in gate] == [("parts", "pair")] * 3
    assert gate[0].differences == pytest.approx([0.5, -0.5]) and gate[2].differences == [-2.0, -2.0]
    adaptive = [r for r in out if r.finding == "adaptive WM vs fixed WM"][0]
    assert adaptive.a == (-6.0, -6.0) and adaptive.b == (-5.5, -6.5)
