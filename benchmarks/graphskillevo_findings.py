"""GraphSkillEvo findings on toolsim: does a population of graph skills evolved by
mutation and crossover beat single-candidate hill-climbing (the paper's SkillOpt
baseline) on held-out test success, and what does crossover add?

Runs the real `graphskillevo` flow over several seeds (each seed is a different
toolsim world: other requests, other noise; the split seed is the run's seed) in three
arms, and reads each run's `gse_test` rows (the champion, best on validation after the
last generation, on the test split):
    graphskillevo: population 4, 4 offspring per generation, rotation [mutate, crossover]
    no_crossover:  population 4, 4 offspring per generation, mutation only
    hill_climb:    population 1, 1 offspring per generation, mutation only (SkillOpt-like:
                   keep the child when it is not worse on validation)
Pairs are (seed, test task): every arm's champion runs the same test tasks under the
same noise. Budgets are not matched (the paper's caveat): the table also prints each
arm's evaluations (executions on train and validation tasks) and invalid offspring.

    .venv/bin/python benchmarks/graphskillevo_findings.py            # 3 seeds, 5 generations
    .venv/bin/python benchmarks/graphskillevo_findings.py --quick    # 1 seed, 1 generation, tiny suite
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from benchmarks.paired import paired_row, table  # noqa: E402
from cli.env import prepare_environment  # noqa: E402

ARMS = {
    "graphskillevo": {"population": 4, "offspring": 4, "operators": ("mutate", "crossover")},
    "no_crossover": {"population": 4, "offspring": 4, "operators": ("mutate",)},
    "hill_climb": {"population": 1, "offspring": 1, "operators": ("mutate",)},
}
QUICK, FULL = (5, 6), (20, 15)
"""(instances per template, train batch per generation) of the quick and the full size."""


def run_arm(root: Path, seed: int, arm: str, generations: int, instances: int, batch: int) -> dict:
    """One graphskillevo run; per test task the champion's and the seed's success, its costs."""
    from flows.graphskillevo import graphskillevo
    from schemas.configs import RunConfig
    from storage.store import open_store

    config = RunConfig(loop="graphskillevo", suite="toolsim", budget=generations, seed=seed, workers=1,
                       tracking=False, suite_params={"instances_per_template": instances, "seed": seed},
                       graphskillevo={**ARMS[arm], "batch": batch})
    store_uri = str(root / f"{arm}-{seed}")
    summary = graphskillevo(config=config, store_uri=store_uri, run_id=f"gse-{arm}-{seed}")
    store = open_store(store_uri)
    test = store.read_rows("gse_test")
    skills = store.read_rows("gse_skills")
    return {
        "champion": {r.task_id: float(r.success) for r in test if r.role == "champion"},
        "seed": {r.task_id: float(r.success) for r in test if r.role == "seed"},
        "evaluations": sum(e.split in ("train", "select") for e in store.read_rows("executions")),
        "offspring": sum(s.gen > 0 for s in skills), "invalid": sum(not s.valid for s in skills),
        "val_success": summary["val_success"],
        "ops": sorted({s.op for s in skills if s.gen > 0}),
    }


def paired(results: dict[str, list[dict]], arm: str, role: str = "champion") -> list[float]:
    """Per (seed, test task), in one order for every arm."""
    return [run[role][task] for run in results[arm] for task in sorted(run[role])]


def counts_table(results: dict[str, list[dict]]) -> str:
    lines = ["| arm | test success | val success (per seed) | offspring | invalid | evaluations (train + val) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for arm, runs in results.items():
        values = paired(results, arm)
        vals = ", ".join(f"{r['val_success']:.3f}" for r in runs)
        lines.append(f"| {arm} | {sum(values) / len(values):.3f} | {vals} | {sum(r['offspring'] for r in runs)} | "
                     f"{sum(r['invalid'] for r in runs)} | {sum(r['evaluations'] for r in runs)} |")
    return "\n".join(lines)


def measure(root: Path, seeds: int, generations: int, instances: int, batch: int) -> tuple[dict, str]:
    started = time.perf_counter()
    results = {arm: [run_arm(root, seed, arm, generations, instances, batch) for seed in range(seeds)]
               for arm in ARMS}
    rows = [paired_row("graphskillevo vs hill-climbing (SkillOpt-like)", "test success", "hill_climb",
                       paired(results, "hill_climb"), "graphskillevo", paired(results, "graphskillevo")),
            paired_row("crossover ablation", "test success", "no_crossover", paired(results, "no_crossover"),
                       "graphskillevo", paired(results, "graphskillevo")),
            paired_row("graphskillevo vs the seed skill", "test success", "seed",
                       paired(results, "graphskillevo", "seed"), "graphskillevo", paired(results, "graphskillevo"))]
    header = (f"graphskillevo on toolsim: {seeds} seeds x {generations} generations, {instances} instances per "
              f"template, batch {batch}; pairs are (seed, test task); {time.perf_counter() - started:.0f} s, "
              f"store {root}")
    return results, f"{header}\n\n{counts_table(results)}\n\n{table(rows).replace('| seeds |', '| pairs |')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 generation, 5 instances per template")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 3, quick 1)")
    parser.add_argument("--generations", type=int, default=None, help="generations per run (default 5, quick 1)")
    parser.add_argument("--store", default=None, help="store folder (default: a temporary one)")
    args = parser.parse_args()
    seeds = args.seeds or (1 if args.quick else 3)
    generations = args.generations or (1 if args.quick else 5)
    instances, batch = QUICK if args.quick else FULL
    root = Path(args.store or tempfile.mkdtemp(prefix="gse-bench-"))
    prepare_environment(str(root))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    print(measure(root, seeds, generations, instances, batch)[1])


if __name__ == "__main__":
    main()
