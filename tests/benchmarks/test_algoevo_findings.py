"""The AlgoEvo findings: per-seed figures on hand-built held-out records (the common
target is the lower final best, evaluations to it and to the first improvement over the
seed program), the paired rows, and the quick mode end to end."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "algoevo_findings.py"


def record(curve):
    return {"curve": curve, "root_score": curve[0]}


def test_seed_metrics(bench):
    records = {"initial": record([1.0, 1.0, 1.0, 1.5, 2.0]), "promoted": record([1.0, 1.8, 1.8, 1.8, 1.8])}
    m = bench.seed_metrics(records, budget=4)
    # target min(2.0, 1.8) = 1.8: initial reaches it at evaluation 4, promoted at 1
    assert {a: v["to_target"] for a, v in m.items()} == {"initial": 4.0, "promoted": 1.0}
    assert {a: v["to_improvement"] for a, v in m.items()} == {"initial": 3.0, "promoted": 1.0}
    assert {a: v["final_best"] for a, v in m.items()} == {"initial": 2.0, "promoted": 1.8}
    flat = bench.seed_metrics({"initial": record([1.0, 0.5]), "promoted": record([1.0, 1.0])}, budget=1)
    assert {a: (v["to_target"], v["to_improvement"]) for a, v in flat.items()} == \
        {"initial": (0.0, 2.0), "promoted": (0.0, 2.0)}  # nobody beat the seed program: budget + 1


def test_rows_pair_promoted_against_initial(bench):
    metrics = {s: bench.seed_metrics({"initial": record([1.0, 1.0, 2.0]), "promoted": record([1.0, 2.0, 2.0])}, 2)
               for s in (0, 1)}
    to_target = next(r for r in bench.rows(metrics, "bin_packing") if r.metric == "evaluations to target")
    assert (to_target.a, to_target.b) == ((2.0, 2.0), (1.0, 1.0))
    assert to_target.differences == pytest.approx([-1.0, -1.0])


@pytest.mark.integration
@pytest.mark.slow
def test_quick_mode_runs_both_arms_and_prints_the_paired_table(bench, prefect_server, tmp_path, capsys):
    bench.main(["--quick", "--store", str(tmp_path / "store")])
    out = capsys.readouterr().out
    assert "seed 0: promoted patterns" in out and "evaluations to target" in out
    assert out.count("| promoted vs initial skill (bin_packing, held out) |") == 3
