"""On-policy distillation findings on arith addition, paired by seed, at equal steps.

Every run is the real `opd` flow on one store (all runs share one teacher, trained once,
and each seed's warm-started student, so the arms of one seed start from identical
weights and draw the same prompts and rollout seeds); every figure is read back from
that store: the registered student's select and holdout accuracy (greedy, exact match)
and the `train_steps` metrics.

Arms (all: G=8 prompts x n=4 rollouts per step, same lr and steps):
  opd              full-token sampled-token reverse-KL OPD, prompts from the full train pool
  dial             DIAL-OPD, rho = 0.4, beta = 0.5
  cal_opd          Cal-OPD, answer-claim probes, amplification 1
  attract_only     Attract/Repel with the repel weight 0
  attract_repel    contrastive, weights 0.5 / 0.5
  fixed8           OPD on a fixed pool of 8 train prompts (DF-OPD's tiny pool)
  teacher_written  OPD on 8 problems the frozen teacher wrote (DF-OPD)

    .venv/bin/python benchmarks/findings_opd.py            # 3 seeds
    .venv/bin/python benchmarks/findings_opd.py --quick    # smoke sizes
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = {
    "opd": {"method": "opd"},
    "dial": {"method": "dial"},
    "cal_opd": {"method": "cal_opd"},
    "attract_only": {"method": "attract_only"},
    "attract_repel": {"method": "attract_repel"},
    "fixed8": {"method": "opd", "prompt_source": "fixed"},
    "teacher_written": {"method": "opd", "prompt_source": "teacher_written"},
}
PAIRS = (
    ("DIAL-OPD vs full-token OPD", "opd", "dial"),
    ("Cal-OPD vs OPD", "opd", "cal_opd"),
    ("attract/repel vs attract-only", "attract_only", "attract_repel"),
    ("DF-OPD: fixed 8 vs full pool", "opd", "fixed8"),
    ("DF-OPD: teacher-written 8 vs full pool", "opd", "teacher_written"),
)


@dataclass(frozen=True)
class Sizes:
    """Run sizes: optimizer steps, teacher and warm-start steps, problems per category."""

    budget: int
    teacher_steps: int
    pretrain_steps: int
    per_category: int
    max_new_tokens: int
    lr: float

    @property
    def tag(self) -> str:
        """Part of each run id, so runs of other sizes can share a store (and its teacher)."""
        return f"b{self.budget}-p{self.pretrain_steps}-lr{self.lr:g}"


FULL = Sizes(budget=30, teacher_steps=400, pretrain_steps=300, per_category=500, max_new_tokens=40, lr=1e-4)
QUICK = Sizes(budget=2, teacher_steps=5, pretrain_steps=5, per_category=20, max_new_tokens=8, lr=1e-3)


@dataclass(frozen=True)
class Run:
    arm: str
    seed: int
    init_select: float
    select: float
    holdout: float
    length_drift: float  # mean response length, last 5 steps minus first 5
    truncated: float  # share of rollouts without eos, mean over steps
    selected_frac: float  # DIAL: share of tokens carrying loss; else nan
    cal_inside: float  # Cal-OPD: share of tokens inside the interval; else nan
    rollout_acc: float  # exact match of the rollouts, mean over steps


def run_config(arm: str, seed: int, sizes: Sizes):
    from schemas.configs import RunConfig
    from schemas.post_training import DistillRunConfig

    cfg = DistillRunConfig(categories=("add",), teacher_steps=sizes.teacher_steps, pretrain_steps=sizes.pretrain_steps,
                           prompts_per_step=8, rollouts=4, max_new_tokens=sizes.max_new_tokens,
                           eval_every=sizes.budget, lr=sizes.lr, **ARMS[arm])
    return RunConfig(loop="opd", suite="arith", budget=sizes.budget, seed=seed, tracking=False, opd=cfg,
                     suite_params={"n_per_category": sizes.per_category})


def run_arm(store_uri: str, arm: str, seed: int, sizes: Sizes) -> Run:
    from flows.opd import opd
    from storage.store import open_store

    run_id = f"{arm}-s{seed}-{sizes.tag}"
    summary = opd(config=run_config(arm, seed, sizes), store_uri=store_uri, run_id=run_id)
    store = open_store(store_uri)
    steps = sorted(store.read_rows("train_steps", run_id), key=lambda s: s.step)
    final = next(r for r in store.read_rows("registry", run_id) if r.stage == "stable")
    window = max(1, min(5, len(steps) // 2))
    lengths = [s.metrics["length_mean"] for s in steps]
    mean_of = lambda key: fmean(s.metrics.get(key, float("nan")) for s in steps)  # noqa: E731
    return Run(arm, seed, summary["init_select_score"], final.select_score, final.holdout_score,
               fmean(lengths[-window:]) - fmean(lengths[:window]), mean_of("truncated_frac"),
               mean_of("selected_frac"), mean_of("cal_inside_frac"), mean_of("accuracy"))


def by_arm(runs: list[Run], arm: str, field: str) -> list[float]:
    return [getattr(r, field) for r in sorted(runs, key=lambda r: r.seed) if r.arm == arm]


def findings(runs: list[Run]) -> str:
    rows = []
    for finding, a, b in PAIRS:
        for metric, field in (("select acc", "select"), ("holdout acc", "holdout")):
            rows.append(paired_row(finding, metric, a, by_arm(runs, a, field), b, by_arm(runs, b, field)))
    for metric, field in (("length drift (tokens)", "length_drift"), ("truncated share", "truncated")):
        rows.append(paired_row("attract/repel vs attract-only", metric, "attract_only",
                               by_arm(runs, "attract_only", field), "attract_repel",
                               by_arm(runs, "attract_repel", field)))
    return table(rows)


def arm_table(runs: list[Run]) -> str:
    fields = ("init_select", "select", "holdout", "rollout_acc", "length_drift", "truncated", "selected_frac",
              "cal_inside")
    lines = ["| arm | " + " | ".join(fields) + " |", "| --- |" + " --- |" * len(fields)]
    for arm in ARMS:
        lines.append(f"| {arm} | " + " | ".join(f"{fmean(by_arm(runs, arm, f)):.3f}" for f in fields) + " |")
    return "\n".join(lines)


def teacher_scores(store_uri: str) -> str:
    from storage.store import open_store

    rows = [r for r in open_store(store_uri).read_rows("registry") if r.name == "arith/teacher"]
    return "; ".join(f"teacher select {r.select_score:.3f}, holdout {r.holdout_score:.3f}" for r in rows)


def run_all(store_uri: str, seeds: list[int], sizes: Sizes) -> list[Run]:
    import torch

    torch.set_num_threads(1)
    return [run_arm(store_uri, arm, seed, sizes) for seed in seeds for arm in ARMS]


def report(runs: list[Run], seeds: list[int], sizes: Sizes, store_uri: str) -> str:
    head = (f"seeds {seeds}; {sizes.budget} steps x 8 prompts x 4 rollouts, lr {sizes.lr:g}; "
            f"teacher {sizes.teacher_steps} steps ({teacher_scores(store_uri)}); "
            f"student warm start {sizes.pretrain_steps} steps; {sizes.per_category} add problems before splitting")
    return "\n\n".join([head, "Mean over seeds:", arm_table(runs), "Paired by seed:", findings(runs)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 steps, tiny teacher (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--store", default=None, help="store to run in (default: a new temporary folder)")
    args = parser.parse_args(argv)
    seeds, sizes = ([0, 1], QUICK) if args.quick else (list(range(args.seeds)), FULL)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-opd-findings-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    print(report(run_all(store_uri, seeds, sizes), seeds, sizes, store_uri))


if __name__ == "__main__":
    main()
