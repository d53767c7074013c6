"""MACE findings on toolsim: does scoring (unit set, form) pairs jointly beat scoring
units and forms separately, and what does the feedback update add (the paper's 81.11%
joint vs the feedback update off 79.70%)?

Runs the loop's own round function (`tasks.loops.mace.practice.co_learn_round`, which the
flow's stages compose) in four arms on the same seeds; each seed is another toolsim world
(requests, noise), and every arm starts from the same MemGoG mined from the seed
harness's logs on the train requests, on the same batches and selection streams:
    joint:        Thompson over (set, form) pairs (the config default)
    factorised:   one Thompson bandit over sets, one over forms, per role
    no_feedback:  the feedback update off: the starting memory, never updated
    no_memory:    no units at all (the seed harness)
Outcome: greedy (posterior-mean) test success with the final memory, under the arm's own
selector (joint for the ablations, whose memories have no statistics). Pairs are (seed, test request). Also
printed: per form, how many (role, unit set) pairs of the joint run's final memory prefer
it (the paper: with the content fixed, the best form can flip).

    .venv/bin/python benchmarks/mace_findings.py            # 5 seeds x 6 rounds
    .venv/bin/python benchmarks/mace_findings.py --quick    # 1 seed x 1 round, tiny suite
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from benchmarks.paired import paired_row, table  # noqa: E402
from schemas.ids import seed_for  # noqa: E402
from schemas.mace import MaceConfig  # noqa: E402

BASE = MaceConfig()
ARMS = ("joint", "factorised", "no_feedback", "no_memory")
QUICK, FULL = (5, 8), (40, 32)
"""(instances per template, requests per round)."""


def run_arm(seed: int, arm: str, rounds: int, instances: int, batch: int) -> dict:
    from suites.toolsim.suite import ToolSim
    from tasks.loops.mace.memory import Memory
    from tasks.loops.mace.practice import co_learn_round, seed_memory, success_on
    from tasks.loops.mace.selector import Limits

    limits = Limits(BASE.inject_budget, BASE.max_sets, BASE.risk_floor, BASE.min_obs, BASE.conflict_margin)
    cases = ToolSim(seed=seed, instances_per_template=instances).cases()
    train, test = [c for c in cases if c.split == "train"], [c for c in cases if c.split == "test"]
    memory = seed_memory(train, BASE.max_units)[1] if arm != "no_memory" else Memory()
    if arm in ("joint", "factorised"):
        for r in range(rounds):
            chosen = random.Random(seed_for(seed, "batch", r)).sample(train, min(batch, len(train)))
            memory = co_learn_round(memory, chosen, arm, limits, BASE.smoothing, BASE.max_units,
                                    random.Random(seed_for(seed, "select", r))).memory
    selector = "factorised" if arm == "factorised" else "joint"
    return {"test": success_on(memory, test, limits, selector), "units": len(memory.units), "memory": memory}


def preferred_forms(memory) -> Counter:
    """Per (role, unit set) with counts in at least two forms: the form of the best
    posterior mean."""
    means: dict[tuple[str, str], dict[str, float]] = {}
    for key, (alpha, beta) in memory.arms.items():
        kind, role, units, *form = key.split("|")
        if kind == "joint" and units != "-":
            means.setdefault((role, units), {})[form[0]] = (1 + alpha) / (2 + alpha + beta)
    return Counter(max(f, key=f.get) for f in means.values() if len(f) >= 2)


def paired(results: dict[str, list[dict]], arm: str) -> list[float]:
    return [run["test"][c] for run in results[arm] for c in sorted(run["test"])]


def measure(seeds: int, rounds: int, instances: int, batch: int) -> tuple[dict, str]:
    started = time.perf_counter()
    results = {arm: [run_arm(seed, arm, rounds, instances, batch) for seed in range(seeds)] for arm in ARMS}
    joint = paired(results, "joint")
    rows = [paired_row("joint (set, form) vs factorised bandits", "test success", "factorised",
                       paired(results, "factorised"), "joint", joint),
            paired_row("feedback update off (paper 79.70 vs 81.11)", "test success", "no_feedback",
                       paired(results, "no_feedback"), "joint", joint),
            paired_row("no memory (seed harness)", "test success", "no_memory", paired(results, "no_memory"),
                       "joint", joint)]
    counts = ["| arm | test success | units (per seed) |", "| --- | --- | --- |"]
    counts += [f"| {arm} | {fmean(paired(results, arm)):.3f} | {', '.join(str(r['units']) for r in results[arm])} |"
               for arm in ARMS]
    forms = sum((preferred_forms(r["memory"]) for r in results["joint"]), Counter())
    flips = "preferred form per (role, unit set) seen in 2+ forms, joint run: " + (
        ", ".join(f"{f} {n}" for f, n in sorted(forms.items())) or "none")
    header = (f"mace on toolsim: {seeds} seeds x {rounds} rounds, {instances} instances per template, {batch} "
              f"requests per round; pairs are (seed, test request); {time.perf_counter() - started:.0f} s")
    return results, f"{header}\n\n" + "\n".join(counts) + f"\n\n{flips}\n\n" + table(rows).replace(
        "| seeds |", "| pairs |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 round, 5 instances per template")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5, quick 1)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per run (default 6, quick 1)")
    args = parser.parse_args()
    seeds = args.seeds or (1 if args.quick else 5)
    rounds = args.rounds or (1 if args.quick else 6)
    print(measure(seeds, rounds, *(QUICK if args.quick else FULL))[1])


if __name__ == "__main__":
    main()
