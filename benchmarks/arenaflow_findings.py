"""ArenaFlow findings on toolsim: does one knockout comparison that both trains the
policy (with key-step credit) and curates a skill library beat tournament-ranked RL
alone (ArenaRL-like), and what do its three parts add (the paper's ablations: no step
attribution, no utility update, no library)?

Runs the loop's own round function (`tasks.loops.arenaflow.loop.train_round`, which
the flow's stage calls) in five arms on the same seeds; each seed is another toolsim
world (requests, noise) and sampling stream, and every arm trains from the same
untrained policy on the same batches:
    arenaflow:     survival-depth credit, utility-gated library (the config defaults)
    no_step_attr:  beta = 0 (plain tournament group advantages)
    no_utility:    utilities never updated: skills selected by id, never pruned
    no_library:    no skills recalled or written
    arenarl:       beta = 0 and no library (tournament-ranked RL alone)
Outcome: greedy test success of the final policy with its library. Pairs are (seed, test
request). Tokens per step: tool calls per trajectory (toolsim's cost analog).

    .venv/bin/python benchmarks/arenaflow_findings.py            # 5 seeds x 6 rounds
    .venv/bin/python benchmarks/arenaflow_findings.py --quick    # 1 seed x 1 round, tiny suite
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from benchmarks.paired import paired_row, table  # noqa: E402
from schemas.arenaflow import ArenaFlowConfig  # noqa: E402
from schemas.ids import derived_id  # noqa: E402

BASE = ArenaFlowConfig()
ARMS = {"arenaflow": {}, "no_step_attr": {"beta": 0.0}, "no_utility": {"utility_update": False},
        "no_library": {"library": False}, "arenarl": {"beta": 0.0, "library": False}}
QUICK, FULL = (5, 4, 4), (40, BASE.batch, BASE.group_size)
"""(instances per template, requests per round, group size)."""


def run_arm(seed: int, arm: str, rounds: int, instances: int, batch: int, group: int) -> dict:
    from suites.toolsim.suite import ToolSim
    from suites.toolsim.templates import TEMPLATES
    from tasks.loops.arenaflow import policy as pol
    from tasks.loops.arenaflow.loop import ArenaSettings, evaluate, train_round
    from tasks.harness_loops.menu import OPTIONS

    s = replace(ArenaSettings(top_k=BASE.top_k, prior_strength=BASE.prior_strength, beta=BASE.beta,
                              min_obs=BASE.min_obs, lr=BASE.lr), group_size=group, **ARMS[arm])
    cases = ToolSim(seed=seed, instances_per_template=instances).cases()
    train, test = [c for c in cases if c.split == "train"], [c for c in cases if c.split == "test"]
    policy, library, tokens, pruned = pol.make_policy(list(TEMPLATES), len(OPTIONS)), {}, [], 0
    for r in range(1, rounds + 1):
        batch_cases = random.Random(derived_id(seed, "arenaflow-batch", r)).sample(train, min(batch, len(train)))
        out = train_round(policy, library, batch_cases, s, seed, r)
        tokens += [t for g in out["groups"] for t in g.tokens]
        pruned += len(out["pruned"])
    return {"test": evaluate(policy, library, test, s), "tokens": fmean(tokens),
            "skills": sum(x.active for x in library.values()), "pruned": pruned}


def paired(results: dict[str, list[dict]], arm: str) -> list[float]:
    return [run["test"][c] for run in results[arm] for c in sorted(run["test"])]


def counts_table(results: dict[str, list[dict]]) -> str:
    lines = ["| arm | test success | active skills (per seed) | pruned | tool calls per trajectory |",
             "| --- | --- | --- | --- | --- |"]
    for arm, runs in results.items():
        lines.append(f"| {arm} | {fmean(paired(results, arm)):.3f} | {', '.join(str(r['skills']) for r in runs)} | "
                     f"{sum(r['pruned'] for r in runs)} | {fmean(r['tokens'] for r in runs):.2f} |")
    return "\n".join(lines)


def measure(seeds: int, rounds: int, instances: int, batch: int, group: int) -> tuple[dict, str]:
    started = time.perf_counter()
    results = {arm: [run_arm(seed, arm, rounds, instances, batch, group) for seed in range(seeds)] for arm in ARMS}
    full = paired(results, "arenaflow")
    rows = [paired_row("ArenaFlow vs ArenaRL-like (paper 35.9 -> 55.4)", "test success", "arenarl",
                       paired(results, "arenarl"), "arenaflow", full)]
    for arm, paper in (("no_step_attr", "48.6"), ("no_utility", "50.7"), ("no_library", "41.2")):
        rows.append(paired_row(f"ablation {arm} (paper {paper} vs 55.4)", "test success", arm,
                               paired(results, arm), "arenaflow", full))
    header = (f"arenaflow on toolsim: {seeds} seeds x {rounds} rounds, {instances} instances per template, "
              f"{batch} requests per round, groups of {group}; pairs are (seed, test request); "
              f"{time.perf_counter() - started:.0f} s")
    return results, f"{header}\n\n{counts_table(results)}\n\n{table(rows).replace('| seeds |', '| pairs |')}"


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
