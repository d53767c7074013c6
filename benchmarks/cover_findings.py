"""CoVer findings on codemidas: the covariance-gated MI test reward with the diversity
filter (cover) against its ablations, paired on the same problems and seeds:
    pass_rate:   the test reward is the share of programs that pass (the paper's
                 "pass-rate test reward" arm), filter on;
    no_filter:   MI+cov reward, no diversity filter;
    uniform_ops: MI+cov with filter, the code role's operator policy left uniform.
Outcomes (the spec's): share of trivial tests (valid drawn tests every candidate passes),
mutant-kill AUC (the suite's pass fraction separating correct candidates from mutants,
labels from the GT select tests) and best-of-16 rerank accuracy. Every program runs in
the subprocess sandbox once per problem on all GT tests and pool inputs (`run_programs`);
the arms then read those outcomes.

    .venv/bin/python benchmarks/cover_findings.py            # 8 problems, 3 seeds, 8 steps
    .venv/bin/python benchmarks/cover_findings.py --quick    # 3 problems, 2 seeds, 3 steps
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = {"cover": dict(reward="mi_cov", filter=True), "pass_rate": dict(reward="pass_rate", filter=True),
        "no_filter": dict(reward="mi_cov", filter=False), "uniform_ops": dict(reward="mi_cov", filter=True, code_lr=0.0)}
METRICS = ("trivial_share", "auc", "rerank")


def build_problems(n: int, pool_size: int, case_timeout_s: float):
    from schemas.configs import SandboxConfig
    from suites.codemidas.suite import kept_tasks
    from suites.executors import make_executor
    from tasks.loops.cover.problems import problem
    from tasks.loops.cover.sandbox import run_programs

    executor = make_executor(SandboxConfig(timeout_s=case_timeout_s))
    problems = [problem(t, 0, pool_size) for t in kept_tasks()[:n]]
    for p in problems:
        p.outcomes = run_programs(p, executor)
    return problems


def measure(problems, seeds: int, steps: int, programs: int, tests: int) -> dict[str, dict[str, list[float]]]:
    """Per arm and metric, one value per (seed, problem) in the same order for every arm."""
    from tasks.loops.cover.rounds import Arm, train_and_evaluate

    out = {}
    for name, knobs in ARMS.items():
        rows = [r for seed in range(seeds) for r in train_and_evaluate(problems, Arm(**knobs), seed, steps, programs, tests)]
        out[name] = {m: [0.5 if r[m] is None else r[m] for r in rows] for m in METRICS}
    return out


def rows_of(found: dict) -> list:
    return [paired_row(f"cover vs {arm}", metric, arm, found[arm][metric], "cover", found["cover"][metric])
            for arm in ARMS if arm != "cover" for metric in METRICS]


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--problems", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args(argv)
    n, seeds, steps = (3, 2, 3) if args.quick else (args.problems, args.seeds, args.steps)
    start = time.time()
    problems = build_problems(n, pool_size=6, case_timeout_s=0.3)
    found = measure(problems, seeds, steps, programs=16, tests=32)
    means = " | ".join(f"{arm}: " + ", ".join(f"{m}={sum(v) / len(v):.3f}" for m, v in found[arm].items())
                       for arm in ARMS)
    text = (f"{n} problems x {seeds} seeds, {steps} steps, 16 programs / 32 tests "
            f"({time.time() - start:.0f} s)\n{means}\n\n{table(rows_of(found))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
