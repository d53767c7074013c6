"""GRPO-family findings on arith addition, paired by seed, at equal optimizer steps.

Every run is the real `grpo` or `ppo_pact` flow on one store. All runs of a seed start
from the same shared warm start (`tasks.training.stages.warm_start`: same categories, steps and
seed) and draw the same prompts and rollout seeds per step; every figure is read back
from the store: the registered policy's select and holdout accuracy (greedy, exact
match) and the `train_steps` metrics (end-of-run values: mean of the last 5 steps).

Arms (all: G=8 prompts x n=8 rollouts per step, AdamW lr 1e-4, same steps):
  outcome_filter  GRPO, shaped reward (correct - 0.3 * length share), group filter on the outcome
  shaped_filter   GRPO, shaped reward, group filter on the shaped reward (Phantom Advantages' unsafe arm)
  grpo            GRPO, outcome reward, outcome filter
  dr_grpo         Dr. GRPO (no std division, constant-length normalisation), outcome reward
  dropout         GRPO + GRPODropout (1 of 8 dropped at most, re-centred)
  ppo             ppo_pact, PPO critic (clipped value MSE), GAE lambda = 1
  pact            ppo_pact, PACT critic (ratio-weighted BCE after the actor update)

Findings: (a) shaped vs outcome filter, (b) Dr. GRPO vs GRPO, (c) GRPODropout vs GRPO,
(d) PACT vs PPO critic (critic MC error: |V(prompt) - group mean outcome|, lower is better).

    .venv/bin/python benchmarks/findings_grpo.py            # 3 seeds
    .venv/bin/python benchmarks/findings_grpo.py --quick    # smoke sizes
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

SHAPED = {"reward": "shaped", "length_coef": 0.3}
ARMS = {
    "outcome_filter": ("grpo", {**SHAPED, "group_filter": "outcome"}),
    "shaped_filter": ("grpo", {**SHAPED, "group_filter": "shaped"}),
    "grpo": ("grpo", {}),
    "dr_grpo": ("grpo", {"advantage": "dr_grpo"}),
    "dropout": ("grpo", {"dropout": True}),
    "ppo": ("ppo_pact", {"critic": "ppo"}),
    "pact": ("ppo_pact", {"critic": "pact"}),
}
PAIRS = (
    ("(a) shaped vs outcome filter", "outcome_filter", "shaped_filter",
     ("select", "holdout", "rollout_acc", "length", "kept_all_fail")),
    ("(b) Dr. GRPO vs GRPO", "grpo", "dr_grpo", ("select", "holdout", "length")),
    ("(c) GRPODropout vs GRPO", "grpo", "dropout", ("select", "holdout", "entropy", "dropped_frac")),
    ("(d) PACT vs PPO critic", "ppo", "pact", ("select", "holdout", "critic_mc_error")),
)
LABELS = {"select": "select acc", "holdout": "holdout acc", "rollout_acc": "rollout acc (end)",
          "length": "length (end, tokens)", "kept_all_fail": "kept all-fail share", "entropy": "entropy (end)",
          "dropped_frac": "dropped share", "critic_mc_error": "critic MC error (end)"}


@dataclass(frozen=True)
class Sizes:
    """Run sizes: optimizer steps, warm-start steps, problems per category, rollout shape."""

    budget: int
    pretrain_steps: int
    per_category: int
    max_new_tokens: int
    prompts: int
    group: int


FULL = Sizes(budget=30, pretrain_steps=300, per_category=500, max_new_tokens=40, prompts=8, group=8)
QUICK = Sizes(budget=2, pretrain_steps=20, per_category=20, max_new_tokens=12, prompts=2, group=4)


@dataclass(frozen=True)
class Run:
    arm: str
    seed: int
    init_select: float
    select: float
    holdout: float
    end: dict[str, float]  # train_steps metrics, mean of the last 5 steps


def run_config(arm: str, seed: int, sizes: Sizes):
    from schemas.configs import RunConfig
    from schemas.post_training import GRPOConfig, PPOPACTConfig

    loop, overrides = ARMS[arm]
    shared = dict(categories=("add",), pretrain_steps=sizes.pretrain_steps, prompts_per_step=sizes.prompts,
                  group_size=sizes.group, max_new_tokens=sizes.max_new_tokens, eval_every=sizes.budget, lr=1e-4)
    loop_config = {"grpo": GRPOConfig, "ppo_pact": PPOPACTConfig}[loop](**shared, **overrides)
    return RunConfig(loop=loop, suite="arith", budget=sizes.budget, seed=seed, tracking=False,
                     suite_params={"n_per_category": sizes.per_category}, **{loop: loop_config})


def run_arm(store_uri: str, arm: str, seed: int, sizes: Sizes) -> Run:
    from flows import LOOPS
    from storage.store import open_store

    run_id = f"{arm}-s{seed}"
    config = run_config(arm, seed, sizes)
    summary = LOOPS[config.loop](config=config, store_uri=store_uri, run_id=run_id)
    store = open_store(store_uri)
    steps = sorted(store.read_rows("train_steps", run_id), key=lambda s: s.step)[-5:]
    final = next(r for r in store.read_rows("registry", run_id) if r.stage == "stable")
    end = {k: fmean(s.metrics[k] for s in steps) for k in steps[-1].metrics}
    return Run(arm, seed, summary["init_select_score"], final.select_score, final.holdout_score, end)


def value(run: Run, field: str) -> float:
    if field == "rollout_acc":
        return run.end["accuracy"]
    if field == "length":
        return run.end["length_mean"]
    return getattr(run, field) if field in ("select", "holdout", "init_select") else run.end[field]


def by_arm(runs: list[Run], arm: str, field: str) -> list[float]:
    return [value(r, field) for r in sorted(runs, key=lambda r: r.seed) if r.arm == arm]


def findings(runs: list[Run]) -> str:
    return table([paired_row(finding, LABELS[f], a, by_arm(runs, a, f), b, by_arm(runs, b, f))
                  for finding, a, b, fields in PAIRS for f in fields])


def arm_table(runs: list[Run]) -> str:
    fields = ("init_select", "select", "holdout", "rollout_acc", "length", "entropy")
    lines = ["| arm | " + " | ".join(fields) + " |", "| --- |" + " --- |" * len(fields)]
    for arm in ARMS:
        lines.append(f"| {arm} | " + " | ".join(f"{fmean(by_arm(runs, arm, f)):.3f}" for f in fields) + " |")
    return "\n".join(lines)


def run_all(store_uri: str, seeds: list[int], sizes: Sizes) -> list[Run]:
    import torch

    torch.set_num_threads(1)
    return [run_arm(store_uri, arm, seed, sizes) for seed in seeds for arm in ARMS]


def report(runs: list[Run], seeds: list[int], sizes: Sizes) -> str:
    head = (f"seeds {seeds}; {sizes.budget} steps x {sizes.prompts} prompts x {sizes.group} rollouts, lr 1e-4; "
            f"warm start {sizes.pretrain_steps} supervised steps; {sizes.per_category} add problems before splitting")
    return "\n\n".join([head, "Mean over seeds:", arm_table(runs), "Paired by seed:", findings(runs)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 steps, tiny warm start (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--store", default=None, help="store to run in (default: a new temporary folder)")
    parser.add_argument("--steps", type=int, default=FULL.budget, help="optimizer steps per arm (full runs)")
    args = parser.parse_args(argv)
    full = replace(FULL, budget=args.steps)
    seeds, sizes = ([0, 1], QUICK) if args.quick else (list(range(args.seeds)), full)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-grpo-findings-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    print(report(run_all(store_uri, seeds, sizes), seeds, sizes))


if __name__ == "__main__":
    main()
