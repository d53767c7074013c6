"""RSIAgent findings on toolsim: the memory built by practice on train cells (breadth,
then depth), frozen, then the target (test) split, paired per target task over several
seeds (each seed a new world: its own cases, noise and practice).

It composes the loop's pure functions (curriculum, practice, memory) round by round as
the flow's stages do, without the store (the gate rule is the same: a new memory version
is admitted iff its select success does not drop).

Paper table shape: held-out success with the frozen memory vs no memory vs the
breadth-only memory (the spec's measurable outcome), Partial and Binary kept separate,
plus two ablations the spec's design implies: the same budget spent on breadth only (no
depth phase), and memory kept without verification (every proposed recovery stored,
verified or not). The paper gives no per-benchmark numbers to compare against.

    .venv/bin/python benchmarks/rsiagent_findings.py            # 5 seeds, 20 instances/template
    .venv/bin/python benchmarks/rsiagent_findings.py --quick    # 3 seeds, 5 instances/template
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = ("none", "breadth", "frozen", "all_breadth", "unverified")


def per_task(cases, entries) -> list[tuple[float, float]]:
    """(binary, partial) per case, in case order, under the memory ``entries``."""
    from tasks.loops.rsiagent.memory import harness_of
    from tasks.loops.rsiagent.practice import execute, verify

    harness = harness_of(entries)
    return [(float(v.passed), v.progress) for v in (verify(c, execute(c, harness)) for c in cases)]


def _success(cases, entries) -> tuple[float, float]:
    found = per_task(cases, entries)
    return fmean(b for b, _ in found), fmean(p for _, p in found)


def prepare(suite, seed: int, rounds: int, breadth_rounds: int, tasks: int, verified: bool = True,
            params: int = 4) -> tuple[list, list, list[str]]:
    """(frozen memory, memory after the breadth phase, templates practice saw)."""
    from schemas.ids import seed_for
    from schemas.rsiagent import EVENTS
    from tasks.loops.rsiagent.curriculum import breadth_plan, cell_key, cell_stats, cells, depth_plan
    from tasks.loops.rsiagent.memory import revise
    from tasks.loops.rsiagent.practice import execute, harness_of, practice_case, recover, rule_writer, verify

    train = {c.case_id: c for c in suite.cases() if c.split == "train"}
    select = [c for c in suite.cases() if c.split == "select"]
    by_template: dict[str, list[str]] = {}
    for c in train.values():
        by_template.setdefault(c.payload["template"], []).append(c.case_id)
    grid, memory, breadth, history, seen = cells(by_template, params, tuple(EVENTS)), [], [], [], set()
    for r in range(rounds):
        if r < breadth_rounds:
            visits: dict = {}
            for cell, _, _ in history:
                visits[cell] = visits.get(cell, 0) + 1
            plan = breadth_plan(grid, visits, tasks, 2, random.Random(seed_for(seed, "breadth", r)))
        else:
            plan = depth_plan(grid, cell_stats(history), tasks, 2, 1.0, 0.5)
        start, rng = list(memory), random.Random(seed_for(seed, "distill", r))
        candidate = list(memory)
        for slot, (cell, _) in enumerate(plan):
            seen.add(cell[0])
            case = practice_case(train[cell[1]], cell[2], seed_for(seed, "practice", r, slot, cell_key(cell)))
            first = verify(case, execute(case, harness_of(start)))
            history.append((cell, first.passed, first.cause))
            now = verify(case, execute(case, harness_of(candidate)))
            if first.passed or now.passed:
                continue
            rec = recover(case, candidate, now, f"{r}/{slot}", 48, rule_writer, rng)
            if rec is not None and (rec.verdict.passed or not verified):
                candidate = revise(candidate, list(rec.entries), 48)
        if candidate != start and _success(select, candidate)[0] >= _success(select, start)[0]:
            memory = candidate
        if r < breadth_rounds:
            breadth = list(memory)
    return memory, breadth, sorted(seen)


def measure(seeds: int, instances: int, rounds: int = 6, breadth_rounds: int = 2,
            tasks: int = 8) -> dict[str, list[tuple[float, float]]]:
    """arm -> per test task (binary, partial), tasks of every seed in the same order."""
    from suites.toolsim.suite import ToolSim

    out: dict[str, list[tuple[float, float]]] = {arm: [] for arm in ARMS}
    for seed in range(seeds):
        suite = ToolSim(seed=seed, instances_per_template=instances)
        test = [c for c in suite.cases() if c.split == "test"]
        frozen, breadth, _ = prepare(suite, seed, rounds, breadth_rounds, tasks)
        all_breadth, _, _ = prepare(suite, seed, rounds, rounds, tasks)
        unverified, _, _ = prepare(suite, seed, rounds, breadth_rounds, tasks, verified=False)
        memories = {"none": [], "breadth": breadth, "frozen": frozen, "all_breadth": all_breadth,
                    "unverified": unverified}
        for arm in ARMS:
            out[arm] += per_task(test, memories[arm])
    return out


COMPARISONS = (("none", "frozen"), ("none", "breadth"), ("breadth", "frozen"), ("all_breadth", "frozen"),
               ("unverified", "frozen"))


def rows_of(found) -> list:
    rows = []
    for a, b in COMPARISONS:
        for index, metric in ((0, "binary"), (1, "partial")):
            rows.append(paired_row(f"{b} vs {a}", metric, a, [x[index] for x in found[a]], b,
                                   [x[index] for x in found[b]]))
    return rows


def headline(found) -> str:
    lines = ["| memory at test time | binary | partial |", "| --- | --- | --- |"]
    for arm in ARMS:
        lines.append(f"| {arm} | {100 * fmean(x[0] for x in found[arm]):.1f}% | "
                     f"{100 * fmean(x[1] for x in found[arm]):.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--instances", type=int, default=20, help="instances per template (8 templates)")
    args = parser.parse_args(argv)
    seeds, instances = (3, 5) if args.quick else (args.seeds, args.instances)
    start = time.time()
    found = measure(seeds, instances)
    text = (f"{seeds} seeds (worlds), {len(found['none'])} test tasks in all; 6 rounds x 8 practice tasks (2 "
            f"breadth); paired per task, the table's 'seeds' column counts tasks ({time.time() - start:.0f} s)\n\n{headline(found)}\n\n{table(rows_of(found))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
