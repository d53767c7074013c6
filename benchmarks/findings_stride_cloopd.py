"""STRIDE and CLOOPD in the `opd` loop on arith chain problems, paired by seed.

Every run is the real `opd` flow on one store (so all runs share one teacher, trained
once); every figure is read back from that store: `train_steps` rows (generated tokens,
wall time, teacher tokens, and the per-step sampled reverse KL to the teacher, averaged
over the last quarter of steps as "late reverse KL") and the registered student (select
accuracy, greedy, single-turn prompts). For STRIDE the registered student's weights are
also played on the select split's chain problems as multi-turn episodes (near-greedy),
the format STRIDE trains on. Teacher tokens: STRIDE counts the new agent tokens the
teacher scored, CLOOPD every position the teacher read (prompts included); compare them
within a method only. STRIDE's reverse KL is over its loss tokens, which the early stop
changes, so it is comparable within CLOOPD only.

Arms, each on the same seeds (the seed sets the student's warm start and the step
draws, so arm A and arm B of one seed start from the same weights):
  full_opd    method=stride with early stop and prefix reuse off: multi-turn OPD
  stride      early stop on teacher support + prefix-buffer restarts, default thresholds
              (stop below -2.0 nats/token, reuse turns at >= -1.0)
  stride_loose  the same with stop -4.0, reuse -2.5 (fewer stops, more reuse)
  passes_1/2/3  method=cloopd, fixed 1, 2 or 3 passes per teacher-scored batch

    .venv/bin/python benchmarks/findings_stride_cloopd.py            # 3 seeds
    .venv/bin/python benchmarks/findings_stride_cloopd.py --quick    # smoke sizes
    .venv/bin/python benchmarks/findings_stride_cloopd.py --arms passes_1,passes_2,passes_3 \
        --cloopd-category add --teacher-steps 300 --pretrain-steps 150   # CLOOPD where the teacher is good
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

STRIDE_ARMS = {
    "full_opd": {"early_stop": False, "prefix_reuse": False},
    "stride": {},
    "stride_loose": {"stop_threshold": -4.0, "pass_threshold": -2.5},
}
CLOOPD_ARMS = {f"passes_{k}": {"passes": k} for k in (1, 2, 3)}


@dataclass(frozen=True)
class Sizes:
    """Run sizes: optimizer steps, teacher and warm-start steps, problems per category, and
    the task family of the CLOOPD arms (STRIDE's episodes are always chain problems)."""

    budget: int
    teacher_steps: int
    pretrain_steps: int
    per_category: int
    cloopd_category: str = "chain"


FULL = Sizes(budget=24, teacher_steps=150, pretrain_steps=60, per_category=200)
QUICK = Sizes(budget=1, teacher_steps=5, pretrain_steps=5, per_category=12)


@dataclass(frozen=True)
class Run:
    arm: str
    seed: int
    gen_tokens: float
    teacher_tokens: float
    actor_tokens: float
    wall_s: float
    select_acc: float
    episode_acc: float  # nan for the CLOOPD arms
    stops: float
    restarts: float
    late_kl: float  # mean per-step sampled reverse KL(student || teacher) over the last quarter of steps


def run_config(arm: str, seed: int, sizes: Sizes):
    from schemas.configs import RunConfig
    from schemas.post_training import CLOOPDMethodConfig, DistillRunConfig, STRIDEMethodConfig

    common = dict(teacher_steps=sizes.teacher_steps, pretrain_steps=sizes.pretrain_steps, prompts_per_step=8,
                  rollouts=1, eval_every=sizes.budget, lr=1e-3)
    if arm in STRIDE_ARMS:
        cfg = DistillRunConfig(method="stride", categories=("chain",), stride=STRIDEMethodConfig(**STRIDE_ARMS[arm]),
                               **common)
    else:
        cfg = DistillRunConfig(method="cloopd", categories=(sizes.cloopd_category,),
                               cloopd=CLOOPDMethodConfig(**CLOOPD_ARMS[arm]), **common)
    return RunConfig(loop="opd", suite="arith", budget=sizes.budget, seed=seed, tracking=False, opd=cfg,
                     suite_params={"n_per_category": sizes.per_category})


def episode_accuracy_of(store, candidate_id: str, sizes: Sizes, max_turn_tokens: int) -> float:
    from suites.arith import Arith
    from suites.arith.episodes import Episode
    from suites.arith.lm import from_bytes
    from tasks.loops.opd.opd_stride import episode_accuracy

    model, _ = from_bytes(store.get_blob(candidate_id))
    suite = Arith(categories=("chain",), n_per_category=sizes.per_category)
    eps = [Episode.of(p) for p in suite.problems("select")]
    return episode_accuracy(model, eps, max_turn_tokens)


def run_arm(store_uri: str, arm: str, seed: int, sizes: Sizes) -> Run:
    from flows.opd import opd
    from storage.store import open_store

    config = run_config(arm, seed, sizes)
    run_id = f"{arm}-s{seed}"
    opd(config=config, store_uri=store_uri, run_id=run_id)
    store = open_store(store_uri)
    steps = store.read_rows("train_steps", run_id)
    final = next(r for r in store.read_rows("registry", run_id) if r.stage == "stable")

    def total(key: str) -> float:
        return sum(s.metrics.get(key, 0.0) for s in steps)

    late = sorted(steps, key=lambda s: s.step)[-max(1, len(steps) // 4):]

    episodes = (episode_accuracy_of(store, final.candidate_id, sizes, config.opd.stride.max_turn_tokens)
                if arm in STRIDE_ARMS else float("nan"))
    return Run(arm, seed, float(sum(s.tokens for s in steps)), total("teacher_tokens"), total("actor_tokens"),
               sum(s.wall_s for s in steps), final.select_score, episodes, total("stops"), total("restarts"),
               fmean(s.metrics["reverse_kl"] for s in late))


def by_arm(runs: list[Run], arm: str, field: str) -> list[float]:
    return [getattr(r, field) for r in sorted(runs, key=lambda r: r.seed) if r.arm == arm]


def findings(runs: list[Run]) -> str:
    rows, arms = [], {r.arm for r in runs}
    for b in ("stride", "stride_loose") if "full_opd" in arms else ():
        for metric, field in (("generated tokens", "gen_tokens"), ("teacher tokens", "teacher_tokens"),
                              ("train wall s", "wall_s"), ("select acc", "select_acc"), ("episode acc", "episode_acc"),
                              ("late reverse KL", "late_kl")):
            rows.append(paired_row(f"{b} vs full OPD", metric, "full_opd", by_arm(runs, "full_opd", field), b,
                                   by_arm(runs, b, field)))
    for b in ("passes_2", "passes_3") if "passes_1" in arms else ():
        for metric, field in (("select acc", "select_acc"), ("late reverse KL", "late_kl"),
                              ("teacher tokens", "teacher_tokens"), ("actor tokens", "actor_tokens"),
                              ("train wall s", "wall_s")):
            rows.append(paired_row(f"CLOOPD 1 vs {b[-1]} passes", metric, "passes_1", by_arm(runs, "passes_1", field),
                                   b, by_arm(runs, b, field)))
    return table(rows)


def arm_table(runs: list[Run]) -> str:
    lines = ["| arm | select acc | episode acc | late reverse KL | gen tokens | teacher tokens | actor tokens "
             "| wall s | stops | restarts |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm in [a for a in [*STRIDE_ARMS, *CLOOPD_ARMS] if by_arm(runs, a, "seed")]:
        acc, episode, kl, *counts, wall, stops, restarts = [
            fmean(by_arm(runs, arm, f)) for f in ("select_acc", "episode_acc", "late_kl", "gen_tokens",
                                                  "teacher_tokens", "actor_tokens", "wall_s", "stops", "restarts")]
        lines.append(f"| {arm} | {acc:.3f} | {episode:.3f} | {kl:.3f} | " + " | ".join(f"{c:.0f}" for c in counts)
                     + f" | {wall:.1f} | {stops:.1f} | {restarts:.1f} |")
    return "\n".join(lines)


def run_all(store_uri: str, seeds: list[int], sizes: Sizes, arms: tuple[str, ...] = (*STRIDE_ARMS, *CLOOPD_ARMS)
            ) -> list[Run]:
    import torch

    torch.set_num_threads(1)
    return [run_arm(store_uri, arm, seed, sizes) for seed in seeds for arm in arms]


def report(runs: list[Run], seeds: list[int], sizes: Sizes) -> str:
    head = (f"seeds {seeds}; {sizes.budget} steps x 8 problems; teacher {sizes.teacher_steps} steps; "
            f"student warm start {sizes.pretrain_steps} steps; {sizes.per_category} problems per category before "
            f"splitting; CLOOPD arms on {sizes.cloopd_category}")
    return "\n\n".join([head, "Mean over seeds:", arm_table(runs), "Paired by seed:", findings(runs)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 step, 5-step teacher (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--store", help="store to run in (reuses its teacher and warm starts); default: a new temp dir")
    parser.add_argument("--arms", default=",".join([*STRIDE_ARMS, *CLOOPD_ARMS]), help="comma-separated arms to run")
    parser.add_argument("--cloopd-category", default="chain", help="task family of the CLOOPD arms")
    parser.add_argument("--teacher-steps", type=int, default=FULL.teacher_steps)
    parser.add_argument("--pretrain-steps", type=int, default=FULL.pretrain_steps)
    args = parser.parse_args(argv)
    full = replace(FULL, teacher_steps=args.teacher_steps, pretrain_steps=args.pretrain_steps,
                   cloopd_category=args.cloopd_category)
    seeds, sizes = ([0], QUICK) if args.quick else (list(range(args.seeds)), full)
    arms = tuple(args.arms.split(","))
    unknown = sorted(set(arms) - {*STRIDE_ARMS, *CLOOPD_ARMS})
    if unknown:
        parser.error(f"unknown arms {unknown}; choose from {[*STRIDE_ARMS, *CLOOPD_ARMS]}")
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-stride-cloopd-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    print(report(run_all(store_uri, seeds, sizes, arms), seeds, sizes))


if __name__ == "__main__":
    main()
