"""Smoke test of benchmarks/findings_opd.py at its --quick sizes: every arm runs the real
opd flow, the report has one row per arm and per paired finding, and every accuracy it
reads back from the store is a share in [0, 1]."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "findings_opd.py"
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_report_covers_every_arm_and_finding(bench, prefect_server, tmp_path, capsys):
    bench.main(["--quick", "--store", str(tmp_path / "store")])
    out = capsys.readouterr().out
    arm_rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    assert set(bench.ARMS) <= set(arm_rows)
    for arm in bench.ARMS:
        init, select, holdout = (float(x) for x in arm_rows[arm].split("|")[2:5])
        assert all(0.0 <= v <= 1.0 for v in (init, select, holdout))
    findings = [line for line in out.splitlines() if line.count("|") == 8 and "---" not in line]
    assert len(findings) == 2 * len(bench.PAIRS) + 2 + 1  # + the header row
    assert "teacher select" in out
