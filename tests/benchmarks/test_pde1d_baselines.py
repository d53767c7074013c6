"""pde1d baselines: the summary's wins and paired CI on hand-built runs, the config
suggestion covers CONFIG_SPACE, and one tiny matched run end to end."""

from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "pde1d_baselines.py"


def _row(random_test, tpe_test):
    return {"source": "s", "target": "t", "seed": 0, "pretrained": 0.3,
            "random": {"val": 0.1, "test": random_test, "chosen_t": 1},
            "tpe": {"val": 0.1, "test": tpe_test, "chosen_t": 2}}


def test_summary_counts_wins_and_pairs_differences(bench):
    s = bench.summary([_row(0.3, 0.1), _row(0.2, 0.1), _row(0.1, 0.2)])
    assert (s["runs"], s["tpe_wins"], s["random_wins"]) == (3, 2, 1)
    assert s["diff"] == pytest.approx((-0.2 - 0.1 + 0.1) / 3)
    assert s["mean"] == pytest.approx({"random": 0.2, "tpe": 0.4 / 3})
    assert s["ci"][0] <= s["diff"] <= s["ci"][1]


def test_suggest_draws_inside_the_config_space(bench):
    import optuna

    from suites.pde1d.space import validate_config

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    for _ in range(20):
        assert validate_config(bench.suggest(study.ask())) is None


def test_a_tiny_matched_run(bench):
    sizes = {"train": 4, "select": 2, "holdout": 2, "per_case": 2}
    [row] = bench.matched_runs([("advection:1.0", "advection:1.5")], [0], 3, sizes)
    for proposer in ("random", "tpe"):
        assert 0.0 <= row[proposer]["val"] <= 10.0 and 1 <= row[proposer]["chosen_t"] <= 3
    # the first 3 TPE trials are its random start-up: the same draws as random search at the same seed
    assert row["tpe"]["config"] == row["random"]["config"]
    assert "| advection:1.0 -> advection:1.5 | 0 |" in bench.report([row])
