"""The graphskillevo findings script at its --quick size (1 seed, 1 generation, tiny
suite): every arm runs the real flow on the same test tasks, the seed skill is the same
in every arm, and the report prints the paired rows."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "graphskillevo_findings.py"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quick_run_pairs_every_arm_on_the_same_test_tasks(bench, prefect_server, tmp_path):
    results, report = bench.measure(tmp_path, 1, 1, *bench.QUICK)
    assert set(results) == set(bench.ARMS)
    tasks = {arm: sorted(run["champion"]) for arm, (run,) in results.items()}
    assert len({tuple(t) for t in tasks.values()}) == 1 and len(tasks["hill_climb"]) == 8
    seeds = {tuple(bench.paired(results, arm, "seed")) for arm in results}
    assert len(seeds) == 1  # the seed skill is the same harness on the same noise in every arm
    assert results["hill_climb"][0]["offspring"] <= 1 and results["graphskillevo"][0]["offspring"] <= 4
    assert all(op.startswith("mutate") for op in results["no_crossover"][0]["ops"])
    assert "| graphskillevo vs hill-climbing (SkillOpt-like) | test success |" in report
    assert "| crossover ablation |" in report
