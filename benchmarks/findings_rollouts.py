"""Paired rollouts (Luck Is Not Skill) and harness scheduling (HarnessBandit) findings on
arith, paired by seed, at equal optimizer steps.

Every run is the real `paired_rollouts` or `harness_bandit` flow on one store, so the
runs of a seed start from the same warm start (`tasks.training.stages.warm_start`) and draw the
same prompts and rollout seeds per step. Every figure is read back from the store: the
registered policy's select accuracy (greedy exact match, no noise) and the train_steps
metrics.

(e) shared vs independent noise (tool failure, rate 0.3 per call, sort problems):
    final select accuracy; the mean-centred gradient covariance trace over 4 noise
    schedules, (i) each arm on its own training batches and (ii) both pairings on the
    same batches (all probe steps of both runs of a seed); the mean cosine of the
    noise-induced gradient with the true-reward gradient; the mean true rollout reward.
(f) HarnessBandit vs uniform (and vs round-robin) over harnesses sort, rev and dsum:
    the mean over harnesses of the final per-harness select accuracy, and the worst harness.

    .venv/bin/python benchmarks/findings_rollouts.py            # 3 seeds
    .venv/bin/python benchmarks/findings_rollouts.py --quick    # smoke sizes
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

HARNESSES = ("sort", "rev", "dsum")
PAIRINGS = ("independent", "shared")
SCHEDULERS = ("uniform", "round_robin", "bandit")


@dataclass(frozen=True)
class Sizes:
    """Optimizer steps, warm-start steps (noise loop, harness loop), problems per
    category, rollout shape, probe cadence."""

    budget: int
    pretrain_noise: int
    pretrain_harness: int
    per_category: int
    prompts: int
    group: int
    probe_every: int


FULL = Sizes(budget=30, pretrain_noise=90, pretrain_harness=200, per_category=500, prompts=4, group=8, probe_every=5)
QUICK = Sizes(budget=2, pretrain_noise=10, pretrain_harness=10, per_category=60, prompts=2, group=4, probe_every=1)


def grpo_config(categories: tuple[str, ...], pretrain: int, sizes: Sizes):
    from schemas.post_training import GRPOConfig

    return GRPOConfig(categories=categories, pretrain_steps=pretrain, prompts_per_step=sizes.prompts,
                      group_size=sizes.group, eval_every=sizes.budget, lr=1e-4, temperature=0.6)


def run_noise(store_uri: str, pairing: str, seed: int, sizes: Sizes) -> dict[str, float]:
    """One paired_rollouts run -> its select accuracy and mean training metrics."""
    from flows.paired_rollouts import paired_rollouts
    from schemas.configs import RunConfig
    from schemas.post_training import PairedRolloutsConfig
    from storage.store import open_store

    noise = PairedRolloutsConfig(noise_pairing=pairing, noise_kind="tool_failure", noise_rate=0.3,
                                 probe_every=sizes.probe_every, probe_schedules=4)
    config = RunConfig(loop="paired_rollouts", suite="arith", budget=sizes.budget, seed=seed, tracking=False,
                       suite_params={"n_per_category": sizes.per_category},
                       grpo=grpo_config(("sort",), sizes.pretrain_noise, sizes), paired_rollouts=noise)
    run_id = f"noise-{pairing}-s{seed}"
    summary = paired_rollouts(config=config, store_uri=store_uri, run_id=run_id)
    steps = open_store(store_uri).read_rows("train_steps", run_id)
    probes = [s.metrics for s in steps if "probe_cov_shared" in s.metrics]
    result = {"select": summary["select_score"], "true_reward": fmean(s.metrics["reward_true_mean"] for s in steps),
              "own_cov": fmean(m[f"probe_cov_{pairing}"] for m in probes),
              "own_cos": fmean(m[f"probe_cos_{pairing}"] for m in probes)}
    for arm in PAIRINGS:
        result[f"cov_{arm}"] = [m[f"probe_cov_{arm}"] for m in probes]
        result[f"cos_{arm}"] = [m[f"probe_cos_{arm}"] for m in probes]
    return result


def harness_accuracy(store, run_id: str, candidate_id: str) -> dict[str, float]:
    """Select accuracy of the candidate per harness (category), from scores and cases."""
    category = {c.case_id: json.loads(c.payload_json)["category"] for c in store.read_rows("cases", run_id)}
    scores = [s for s in store.read_rows("scores", run_id) if s.candidate_id == candidate_id and s.split == "select"]
    return {h: fmean(s.value for s in scores if category[s.case_id] == h) for h in HARNESSES}


def run_harness(store_uri: str, scheduler: str, seed: int, sizes: Sizes) -> dict[str, float]:
    """One harness_bandit run -> mean and worst per-harness select accuracy, visits."""
    from flows.harness_bandit import harness_bandit
    from schemas.configs import RunConfig
    from schemas.post_training import HarnessBanditConfig
    from storage.store import open_store

    config = RunConfig(loop="harness_bandit", suite="arith", budget=sizes.budget, seed=seed, tracking=False,
                       suite_params={"n_per_category": sizes.per_category},
                       grpo=grpo_config(HARNESSES, sizes.pretrain_harness, sizes),
                       harness_bandit=HarnessBanditConfig(harnesses=HARNESSES, scheduler=scheduler))
    run_id = f"harness-{scheduler}-s{seed}"
    summary = harness_bandit(config=config, store_uri=store_uri, run_id=run_id)
    store = open_store(store_uri)
    accuracy = harness_accuracy(store, run_id, summary["candidate_id"])
    picks = [int(s.metrics["harness"]) for s in store.read_rows("train_steps", run_id)]
    visits = {f"visits_{h}": picks.count(i) for i, h in enumerate(HARNESSES)}
    return {"mean_acc": fmean(accuracy.values()), "worst_acc": min(accuracy.values()),
            **{f"acc_{h}": a for h, a in accuracy.items()}, **visits}


def noise_rows(runs: dict[tuple[str, int], dict], seeds: list[int]) -> list:
    def per_seed(pairing: str, key: str) -> list[float]:
        return [runs[pairing, s][key] for s in seeds]

    def same_batches(arm: str, key: str) -> list[float]:
        return [fmean(runs["independent", s][f"{key}_{arm}"] + runs["shared", s][f"{key}_{arm}"]) for s in seeds]

    finding = "(e) shared vs independent noise"
    return [
        paired_row(finding, "select acc (final)", "indep", per_seed("independent", "select"),
                   "shared", per_seed("shared", "select")),
        paired_row(finding, "true rollout reward (mean)", "indep", per_seed("independent", "true_reward"),
                   "shared", per_seed("shared", "true_reward")),
        paired_row(finding, "grad cov trace (own batches)", "indep", per_seed("independent", "own_cov"),
                   "shared", per_seed("shared", "own_cov")),
        paired_row(finding, "grad cov trace (same batches)", "indep", same_batches("independent", "cov"),
                   "shared", same_batches("shared", "cov")),
        paired_row(finding, "cos(noise grad, true grad)", "indep", same_batches("independent", "cos"),
                   "shared", same_batches("shared", "cos")),
    ]


def harness_rows(runs: dict[tuple[str, int], dict], seeds: list[int]) -> list:
    rows = []
    for baseline in ("uniform", "round_robin"):
        finding = f"(f) bandit vs {baseline.replace('_', '-')}"
        for key, label in (("mean_acc", "mean select acc over harnesses"), ("worst_acc", "worst-harness select acc")):
            rows.append(paired_row(finding, label, baseline, [runs[baseline, s][key] for s in seeds],
                                   "bandit", [runs["bandit", s][key] for s in seeds]))
    return rows


def harness_table(runs: dict[tuple[str, int], dict], seeds: list[int]) -> str:
    fields = [f"acc_{h}" for h in HARNESSES] + [f"visits_{h}" for h in HARNESSES]
    lines = ["| scheduler | " + " | ".join(fields) + " |", "| --- |" + " --- |" * len(fields)]
    for scheduler in SCHEDULERS:
        lines.append(f"| {scheduler} | " + " | ".join(f"{fmean(runs[scheduler, s][f] for s in seeds):.3f}"
                                                       for f in fields) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 steps, tiny warm starts (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--store", default=None, help="store to run in (default: a new temporary folder)")
    args = parser.parse_args(argv)
    seeds, sizes = ([0, 1], QUICK) if args.quick else (list(range(args.seeds)), FULL)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-rollouts-findings-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    import torch

    torch.set_num_threads(1)
    noise = {(p, s): run_noise(store_uri, p, s, sizes) for s in seeds for p in PAIRINGS}
    harness = {(h, s): run_harness(store_uri, h, s, sizes) for s in seeds for h in SCHEDULERS}
    head = (f"seeds {seeds}; {sizes.budget} steps x {sizes.prompts} prompts x {sizes.group} rollouts, lr 1e-4, "
            f"rollout temperature 0.6; warm starts {sizes.pretrain_noise} (sort) / {sizes.pretrain_harness} "
            f"({'+'.join(HARNESSES)}) supervised steps; probe every {sizes.probe_every} steps, 4 schedules")
    print("\n\n".join([head, "Paired by seed:", table(noise_rows(noise, seeds) + harness_rows(harness, seeds)),
                       "Harness scheduling, mean over seeds (final select accuracy per harness, steps per harness):",
                       harness_table(harness, seeds)]))


if __name__ == "__main__":
    main()
