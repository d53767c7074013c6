"""pde1d baselines: Optuna TPE vs random search at equal trials, paired per (condition,
seed), the shape of Prior-or-Feedback's final-test table (its LM proposer is not here).

A run is one 20-trial search over CONFIG_SPACE (suites/pde1d/space.py) for one
source -> target condition and seed: each trial fine-tunes a fresh copy of the source's
pretrained operator on the target's 30 training trajectories and is scored by the mean
validation (select, 14 trajectories) autoregressive nRMSE; after the last trial the
best-validation config is tested once on the 40 holdout trajectories. TPE (Optuna's
default TPESampler: its first 10 trials are random) and random search (RandomSampler)
share the condition, the seed (sampler seed and data seed) and the suite; the proposals
are Optuna's own numbers, not programs, so they run in-process through the suite's own
runner and trusted scorer (the sandbox is for candidate code). An invalid config (a
diverged fine-tune) scores the floor nRMSE 10.

    .venv/bin/python benchmarks/pde1d_baselines.py              # 4 conditions x 3 seeds, 20 trials
    .venv/bin/python benchmarks/pde1d_baselines.py --quick      # 1 condition x 2 seeds, 5 trials
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from suites.pde1d.suite import Pde1d  # noqa: E402
from suites.pde1d.trials import split_nrmse, suggest  # noqa: E402
from tasks.gate.stats import paired_bootstrap_ci, sign_test_p  # noqa: E402

CONDITIONS = (("burgers:0.1", "burgers:0.02"), ("advection:1.0", "advection:2.0"),
              ("advection:1.0", "burgers:0.05"), ("burgers:0.05", "advection:1.0"))
PROPOSERS = ("random", "tpe")


def search(suite: Pde1d, cases: list, proposer: str, seed: int, trials: int) -> dict:
    """One run: ``trials`` proposals, the best-validation config and its test nRMSE."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed) if proposer == "tpe" else optuna.samplers.RandomSampler(seed=seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.optimize(lambda trial: split_nrmse(suite, cases, suggest(trial), "select"), n_trials=trials)
    best = study.best_trial
    return {"val": best.value, "test": split_nrmse(suite, cases, suggest(optuna.trial.FixedTrial(best.params)),
                                                    "holdout"), "chosen_t": best.number + 1, "config": best.params}


def matched_runs(conditions, seeds, trials: int, sizes: dict) -> list[dict]:
    """Every (condition, seed) run by every proposer on the same suite."""
    rows = []
    for source, target in conditions:
        for seed in seeds:
            suite = Pde1d(source=source, target=target, seed=seed, **sizes)
            cases = suite.cases()
            row = {"source": source, "target": target, "seed": seed,
                   "pretrained": split_nrmse(suite, cases, _no_tuning(), "holdout")}
            for proposer in PROPOSERS:
                row[proposer] = search(suite, cases, proposer, seed, trials)
            rows.append(row)
    return rows


def _no_tuning() -> dict:
    """The pretrained operator as it is: one step at the smallest learning rate."""
    return {"lr": 1e-4, "optimizer": "sgd", "loss": "mse", "epochs": 1, "modes": 32, "weight_decay": 0.0}


def summary(rows: list[dict]) -> dict:
    """Matched wins of TPE over random, and TPE - random test nRMSE with its CI."""
    d = [r["tpe"]["test"] - r["random"]["test"] for r in rows]
    low, high = paired_bootstrap_ci(d)
    return {"runs": len(rows), "tpe_wins": sum(x < 0 for x in d), "random_wins": sum(x > 0 for x in d),
            "mean": {p: fmean(r[p]["test"] for r in rows) for p in PROPOSERS},
            "pretrained": fmean(r["pretrained"] for r in rows),
            "diff": fmean(d), "ci": (low, high), "sign_p": sign_test_p(d)}


def report(rows: list[dict]) -> str:
    lines = ["| source -> target | seed | pretrained test | random val / test (t*) | TPE val / test (t*) |",
             "| --- | --- | --- | --- | --- |"]
    for r in rows:
        cells = [f"{r[p]['val']:.4f} / {r[p]['test']:.4f} ({r[p]['chosen_t']})" for p in PROPOSERS]
        lines.append(f"| {r['source']} -> {r['target']} | {r['seed']} | {r['pretrained']:.4f} | {' | '.join(cells)} |")
    s = summary(rows)
    lines += ["", f"final test nRMSE, mean over {s['runs']} matched runs: pretrained {s['pretrained']:.4f}, "
              f"random {s['mean']['random']:.4f}, TPE {s['mean']['tpe']:.4f}",
              f"TPE lower than random in {s['tpe_wins']}/{s['runs']} runs (random lower in {s['random_wins']}); "
              f"TPE - random {s['diff']:+.4f} [{s['ci'][0]:+.4f}, {s['ci'][1]:+.4f}] (95% paired bootstrap CI), "
              f"sign p {s['sign_p']:.2f}"]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None)
    args = parser.parse_args(argv)
    conditions = CONDITIONS[:1] if args.quick else CONDITIONS
    seeds = range(args.seeds or (2 if args.quick else 3))
    trials = args.trials or (5 if args.quick else 20)
    start = time.perf_counter()
    rows = matched_runs(conditions, seeds, trials, {})
    print(report(rows))
    print(f"\n{len(rows)} matched runs x {len(PROPOSERS)} proposers x {trials} trials in "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
