"""Research World Models on lasso, offline: build the experiment archive from real
sandbox evaluations (``--interventions`` knob settings of the seed solver, each run on
every lasso case, gain vs the seed per dataset), then let each predictor choose 3 of 16
proposals per dataset, same-env and cross-env, and report mean Regret@3 and NDCG@3.

    python benchmarks/research_world_models.py [--interventions 40] [--draws 50]
"""

from __future__ import annotations

import argparse
import time
from statistics import fmean

from suites.executors.subprocess import SubprocessExecutor
from suites.lasso import Lasso
from tasks.gate.stats import paired_bootstrap_ci
from tasks.loops.research_world_models.archive import apply_knobs, interventions, records
from tasks.loops.research_world_models.selection import selection_metrics


def scores_of(program: str, suite: Lasso, executor: SubprocessExecutor) -> dict[str, float]:
    """The primary metric of ``program`` on every case (all splits: each dataset is an env)."""
    cases = suite.cases()
    results = executor.run(program, suite.runner_source(), suite.entrypoint, cases)
    return {case.case_id: suite.score(case, result.output if result.status == "ok" else None)
            .metrics[suite.primary_metric] for case, result in zip(cases, results, strict=True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interventions", type=int, default=40, help="Knob settings executed for the archive.")
    parser.add_argument("--draws", type=int, default=50, help="Draws of 16 proposals per dataset.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    suite, executor = Lasso(repeats=3), SubprocessExecutor()
    start = time.perf_counter()
    seed_scores = scores_of(suite.seed_program(), suite, executor)
    knob_sets = interventions(args.interventions, args.seed)
    scores = [scores_of(apply_knobs(suite.seed_program(), knobs), suite, executor) for knobs in knob_sets]
    archive = records(knob_sets, scores, seed_scores)
    print(f"archive: {len(archive)} records, {len({r.group for r in archive})} near-duplicate groups, "
          f"built in {time.perf_counter() - start:.0f} s")
    envs = sorted({r.env_id for r in archive})
    for env in envs:
        best = max(r.gain for r in archive if r.env_id == env)
        print(f"  {env:<14} best gain {best:+.3f} (log10 speed-up over the seed)")
    print(f"\n{'setting':<10} {'env':<14} " + " ".join(f"{p + ' R@3':>10} {p + ' N@3':>10}"
                                                    for p in ("prior", "knn", "ridge")))
    for cross_env in (False, True):
        setting = "cross" if cross_env else "same"
        cut = {p: [] for p in ("knn", "ridge")}
        for env in envs:
            metrics = selection_metrics(archive, env, cross_env, args.draws, seed=args.seed)
            means = {p: (fmean(metrics[p][0]), fmean(metrics[p][1])) for p in metrics}
            cells = " ".join(f"{means[p][0]:10.3f} {means[p][1]:10.3f}" for p in ("prior", "knn", "ridge"))
            print(f"{setting:<10} {env:<14} {cells}")
            for p in cut:
                cut[p].append(means[p][0] - means["prior"][0])
        for p, diffs in cut.items():
            low, high = paired_bootstrap_ci(diffs)
            print(f"  {setting}: {p} - prior Regret@3 {fmean(diffs):+.3f} [{low:+.3f}, {high:+.3f}] "
                  f"(95% CI over the {len(diffs)} environments)")

if __name__ == "__main__":
    main()
