"""Smoke test of benchmarks/findings_grpo.py at its --quick sizes: every arm runs through
the real flows on one store, the arms of a seed share one warm start, and the paired
table has a row per (finding, metric) with values read back from the store."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "findings_grpo.py"
pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_findings_run_every_arm_and_print_every_row(bench, prefect_server, tmp_path, capsys):
    from storage.store import open_store

    bench.main(["--quick", "--store", str(tmp_path)])
    out = capsys.readouterr().out
    for finding, a, b, fields in bench.PAIRS:
        for field in fields:
            assert f"| {finding} | {bench.LABELS[field]} | {a} " in out
    store = open_store(str(tmp_path))
    registry = store.read_rows("registry")
    for seed in (0, 1):
        inits = {r.candidate_id for r in registry if r.stage == "experimental" and r.run_id.endswith(f"-s{seed}")}
        assert len(inits) == 1  # every arm of the seed starts from the same warm start
        finals = [r for r in registry if r.stage == "stable" and r.run_id.endswith(f"-s{seed}")]
        assert len(finals) == len(bench.ARMS) and all(0.0 <= r.holdout_score <= 1.0 for r in finals)
    steps = store.read_rows("train_steps")
    assert len(steps) == 2 * len(bench.ARMS) * bench.QUICK.budget
    shaped = [s for s in steps if s.run_id.startswith("shaped_filter")]
    outcome = [s for s in steps if s.run_id.startswith("outcome_filter")]
    # the quick warm start never answers correctly: only the shaped filter keeps (all-fail) groups
    assert all(s.metrics["kept_all_fail"] == 1.0 for s in shaped if s.metrics["kept_groups"] > 0)
    assert all(s.metrics["kept_groups"] == 0.0 for s in outcome if s.metrics["accuracy"] == 0.0)
