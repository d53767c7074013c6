"""MOSCOPT findings on toolsim (version 2: each loaded plan skill for another template
costs step budget, and irrelevant rules fire): the full loop against the spec's
ablations, paired on the same suite seeds (worlds, noise) and loop seeds:
    freeze_g:     G is never edited (stage-2 rounds become stage-1 rounds);
    all_at_once:  every round applies one edit of each stage together, gated as one;
    load_all:     K = the whole pool (no selection: every skill loaded everywhere);
    seed:         no edit at all (the seed pool, G empty, K loaded).
Outcome: the final state's success on the test cases (never seen by the gate), plus
validation (select) success and accepted edits. The composition is the flow's rounds
(``tasks.loops.moscopt.loop.run_round``) with the suite's trusted episode simulated in
this process (the flow runs each composed harness through the sandbox). Departures: the
paper's 74.1 / 70.9 / 67.3 are benchmark averages over 5 task families and 3 LLMs; here
one simulated suite, mutation operators, no LLM.

    .venv/bin/python benchmarks/moscopt_findings.py            # 8 seeds, 24 rounds
    .venv/bin/python benchmarks/moscopt_findings.py --quick    # 3 seeds, 8 rounds
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402
from schemas.ids import seed_for  # noqa: E402
from suites.toolsim.episode import run_episode  # noqa: E402
from suites.toolsim.harness import parse_harness  # noqa: E402
from suites.toolsim.suite import ToolSim  # noqa: E402
from tasks.loops.moscopt.catalogue import SEED_HARNESS, catalogue  # noqa: E402
from tasks.loops.moscopt.edits import Memory  # noqa: E402
from tasks.loops.moscopt.loop import Knobs, mean_success, run_round, toolsim_simulator  # noqa: E402
from tasks.loops.moscopt.pool import State, seed_pool  # noqa: E402
from tasks.proposers.rule_evidence import trace_of  # noqa: E402

ARMS = ("moscopt", "freeze_g", "all_at_once", "load_all", "seed")


@dataclass(frozen=True)
class Setup:
    rounds: int = 24
    k: int = 2
    period: int = 4
    max_pool: int = 8
    instances: int = 20
    max_steps: int = 16


def arm_knobs(arm: str, setup: Setup, pool_size: int) -> Knobs:
    k = setup.max_pool if arm == "load_all" else setup.k
    return Knobs(k=k, period=setup.period, max_pool=setup.max_pool, freeze_gating=arm == "freeze_g",
                 all_at_once=arm == "all_at_once")


def run_arm(arm: str, seed: int, setup: Setup) -> dict:
    cases = ToolSim(seed=seed, instances_per_template=setup.instances, max_steps=setup.max_steps, version=2).cases()
    harness = parse_harness(SEED_HARNESS)
    traces = [trace_of(c.case_id, c.payload, run_episode(c.payload, harness)) for c in cases if c.split == "train"]
    edits = catalogue(traces)
    state, memory, stats = State.of(seed_pool(edits["rules"], edits["plans"])), Memory(), {}
    knobs = arm_knobs(arm, setup, len(state.pool))
    simulate = toolsim_simulator(cases, knobs.k)
    accepted = 0
    for r in range(1, 0 if arm == "seed" else setup.rounds + 1):
        rd = run_round(r, state, memory, stats, edits, knobs, simulate, seed_for(seed, "moscopt", r))
        state, stats = rd.state, rd.stats
        accepted += rd.outcome is not None and rd.outcome.decision == "accept"
    return {"test": mean_success(simulate(state, "test")), "select": mean_success(simulate(state, "select")),
            "accepted": accepted, "pool": len(state.pool)}


def measure(seeds: int, setup: Setup) -> dict[str, list[dict]]:
    """Per arm, one result per seed, in seed order."""
    return {arm: [run_arm(arm, seed, setup) for seed in range(seeds)] for arm in ARMS}


def rows_of(found: dict) -> list:
    return [paired_row(f"moscopt vs {arm}", "test success", arm, [r["test"] for r in found[arm]], "moscopt",
                       [r["test"] for r in found["moscopt"]]) for arm in ARMS[1:]]


def arm_table(found: dict) -> str:
    lines = ["| arm | test success | select success | accepted edits | final pool |", "| --- | --- | --- | --- | --- |"]
    for arm in ARMS:
        rs = found[arm]
        lines.append(f"| {arm} | {fmean(r['test'] for r in rs):.3f} | {fmean(r['select'] for r in rs):.3f} | "
                     f"{fmean(r['accepted'] for r in rs):.1f} | {fmean(r['pool'] for r in rs):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=24)
    args = parser.parse_args(argv)
    seeds, setup = (3, Setup(rounds=8)) if args.quick else (args.seeds, Setup(rounds=args.rounds))
    start = time.time()
    found = measure(seeds, setup)
    text = (f"toolsim v2, {setup.instances} instances per template, max_steps {setup.max_steps}, {seeds} seeds, "
            f"{setup.rounds} rounds, K={setup.k}, stage-3 period {setup.period} ({time.time() - start:.0f} s)\n\n"
            f"{arm_table(found)}\n\n{table(rows_of(found))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
