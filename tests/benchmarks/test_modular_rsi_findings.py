"""The modular_rsi findings script at its --quick size (1 seed, 1 round, tiny suite):
every arm runs the same benchmark cases, held-out cases never come from a pool
template, the base arm is never edited, and the report prints the paper's rows."""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "modular_rsi_findings.py"


def test_quick_run_pairs_every_arm_on_the_same_cases(bench):
    results, report = bench.measure(*bench.QUICK)
    (run,) = results
    for split in ("held_out", "in_domain"):
        assert len({tuple(sorted(run[arm][split])) for arm in bench.ARMS}) == 1
    held = {c.split("/")[0] for c in run["base"]["held_out"]}
    seen = {c.split("/")[0] for c in run["base"]["in_domain"]}
    assert held and seen and not held & seen and len(seen) == 4
    assert run["base"]["edits"] == 0 and run["base"]["rules"] == 0
    assert all(run[arm]["accepted"] <= run[arm]["edits"] for arm in bench.ARMS)
    assert run["modular"]["edits"] <= 5  # one edit per routed module per round
    assert "| modular vs non-modular (held_out) | success | monolithic" in report
    assert "| contrast ablation (in_domain) |" in report and "| base |" in report
