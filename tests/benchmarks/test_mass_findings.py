"""The mass findings script at its --quick size (1 seed, 1 generation, tiny suite): every
model is scored on the same held-out cases, the students are cloned from filtered
(successful) runs only, and the report prints the spec's comparisons and the optimizer
check."""

from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "mass_findings.py"


def test_quick_run_pairs_every_model_on_the_same_held_out_cases(bench):
    results, report = bench.measure(1, 1, bench.QUICK)
    (run,) = results
    cases = {m: tuple(sorted(run["success"][m])) for m in bench.MODELS}
    assert len(set(cases.values())) == 1 and len(cases["workflow-seed"]) == 8  # one holdout instance per template
    assert all(v in (0.0, 1.0) for m in bench.MODELS for v in run["success"][m].values())
    assert all(v >= 1 for m in bench.MODELS for v in run["calls"][m].values())
    # the single-agent workflow applies no rule, so its student clones "all off": it runs like the seed workflow
    assert run["success"]["policy-single-agent"] == run["success"]["workflow-seed"]
    assert len(run["preference"]) == 8 and set(run["preference"]) <= {0.0, 0.5, 1.0}
    assert run["examples"]["policy-single-agent"] <= 8 * 3  # 8 train cases x ceil(1.4 * 2) repeats, successes only
    assert "| distilled policy vs evolved workflow (student carries the workflow) | held-out success |" in report
    for finding in ("multi-agent vs single-agent student", "ablation: distil the final workflow only",
                    "optimizer check"):
        assert finding in report
