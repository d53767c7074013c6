"""Smoke test of benchmarks/findings_rollouts.py at its --quick sizes: every arm runs the
real paired_rollouts or harness_bandit flow, the report has every paired finding and a
per-scheduler row, and the accuracies it reads back from the store are shares in [0, 1]."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "findings_rollouts.py"
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_report_covers_every_finding_and_scheduler(bench, prefect_server, tmp_path, capsys):
    bench.main(["--quick", "--store", str(tmp_path / "store")])
    out = capsys.readouterr().out
    findings = [line for line in out.splitlines() if line.startswith("| (")]
    assert len(findings) == 5 + 4  # noise rows, harness rows
    assert sum("(e) shared vs independent noise" in line for line in findings) == 5
    schedulers = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    assert set(bench.SCHEDULERS) <= set(schedulers)
    for scheduler in bench.SCHEDULERS:
        cells = [float(x) for x in schedulers[scheduler].split("|")[2:-1]]
        accuracies, visits = cells[:3], cells[3:]
        assert all(0.0 <= a <= 1.0 for a in accuracies) and sum(visits) == pytest.approx(2.0)  # 2 steps per run
