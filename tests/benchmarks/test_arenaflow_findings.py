"""The arenaflow findings script at its --quick size (1 seed, 1 round, tiny suite):
every arm trains from the same untrained policy and is scored on the same test
requests, the library arms write skills and the no-library arms none, and the report
prints the paper's comparison and its three ablations."""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "arenaflow_findings.py"


def test_quick_run_pairs_every_arm_on_the_same_test_requests(bench):
    results, report = bench.measure(1, 1, *bench.QUICK)
    assert set(results) == set(bench.ARMS)
    requests = {arm: tuple(sorted(run["test"])) for arm, (run,) in results.items()}
    assert len(set(requests.values())) == 1 and len(requests["arenaflow"]) == 8
    assert results["no_library"][0]["skills"] == results["arenarl"][0]["skills"] == 0
    assert results["arenaflow"][0]["skills"] > 0
    assert all(0.0 <= v <= 1.0 for arm in results for v in bench.paired(results, arm))
    assert "| ArenaFlow vs ArenaRL-like (paper 35.9 -> 55.4) | test success |" in report
    for arm in ("no_step_attr", "no_utility", "no_library"):
        assert f"| ablation {arm} " in report
