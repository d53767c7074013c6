"""Smoke test of benchmarks/busy_machine.py at tiny budgets: the demo's two runs, idle and
beside two busy loops, decide the same champions and gates with the same timeouts, and
the report prints its verdicts."""

import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "busy_machine.py"

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture(scope="module")
def result(bench, prefect_server, tmp_path_factory):
    return bench.compare(4, 2, str(tmp_path_factory.mktemp("busy_machine")))


def test_both_conditions_ran_the_demo_configs(bench, result):
    for condition in ("idle", "busy"):
        outcomes = result[condition]
        assert [o.suite for o in outcomes] == list(bench.SUITES)
        assert all(o.executions > 0 and o.wall_s > 0 and o.champions for o in outcomes)
        assert all(0 <= o.timeouts <= o.executions for o in outcomes)
    assert result["hogs_survived"]
    assert math.isfinite(result["wall_ratio"]) and result["wall_ratio"] > 0


def test_a_busy_machine_changes_no_decision(result):
    assert result["champions_identical"] and result["decisions_identical"]
    assert [o.timeout_limits for o in result["busy"]] == [o.timeout_limits for o in result["idle"]]
    assert [o.executions for o in result["busy"]] == [o.executions for o in result["idle"]]


def test_the_report_prints_the_verdicts(bench, result):
    text = bench.report(result)
    assert "champions identical: yes" in text and "gate decisions identical: yes" in text
    assert f"wall-time ratio busy / idle: {result['wall_ratio']:.2f}" in text
