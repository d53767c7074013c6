"""The mace findings script at its --quick size (1 seed, 1 round, tiny suite): every arm
starts from the same mined memory and is scored on the same test requests, no_memory
holds no unit, no_feedback keeps the starting memory, and the report prints the joint vs
factorised comparison and the two ablations."""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "mace_findings.py"


def test_quick_run_pairs_every_arm_on_the_same_test_requests(bench):
    results, report = bench.measure(1, 1, *bench.QUICK)
    assert set(results) == set(bench.ARMS)
    requests = {arm: tuple(sorted(run["test"])) for arm, (run,) in results.items()}
    assert len(set(requests.values())) == 1 and len(requests["joint"]) == 8
    assert results["no_memory"][0]["units"] == 0 and results["no_feedback"][0]["units"] > 0
    assert not results["no_feedback"][0]["memory"].arms and results["joint"][0]["memory"].arms
    assert all(0.0 <= v <= 1.0 for arm in results for v in bench.paired(results, arm))
    assert "| joint (set, form) vs factorised bandits | test success |" in report
    assert "| feedback update off (paper 79.70 vs 81.11) |" in report and "| no memory (seed harness) |" in report


def test_preferred_forms_counts_sets_seen_in_two_forms(bench):
    from tasks.loops.mace.memory import Memory

    memory = Memory(arms={"joint|lookup|a|guideline": [1, 3], "joint|lookup|a|checklist": [3, 1],
                          "joint|lookup|b|constraint": [5, 0], "joint|action|-|none": [2, 2]})
    assert bench.preferred_forms(memory) == {"checklist": 1}
