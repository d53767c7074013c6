"""The lasso suite's noise floor: score the seed N times in the real sandbox and report,
per select case and for the select mean of ``neg_log10_cpu_ms`` (what the gate compares),
the spread between runs. A gate delta below the mean's spread is noise.

    python benchmarks/lasso_noise.py [--runs 10] [--split select]
"""

from __future__ import annotations

import argparse
import statistics

from suites.executors.subprocess import SubprocessExecutor
from suites.lasso import Lasso


def measure(runs: int, split: str) -> dict[str, list[float]]:
    """``neg_log10_cpu_ms`` per case (and the split mean, key ``mean``) over ``runs`` runs."""
    suite, executor = Lasso(), SubprocessExecutor()
    cases = [c for c in suite.cases() if c.split == split]
    values: dict[str, list[float]] = {c.case_id: [] for c in cases} | {"mean": []}
    for _ in range(runs):
        results = executor.run(suite.seed_program(), suite.runner_source(), suite.entrypoint, cases)
        scores = []
        for case, result in zip(cases, results, strict=True):
            verdict = suite.score(case, result.output)
            if not verdict.valid:
                raise SystemExit(f"the seed is invalid on {case.case_id}: {verdict.reason}")
            values[case.case_id].append(verdict.metrics[suite.primary_metric])
            scores.append(verdict.metrics[suite.primary_metric])
        values["mean"].append(statistics.fmean(scores))
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="Times the seed is scored.")
    parser.add_argument("--split", default="select", help="Split whose cases are scored.")
    args = parser.parse_args()
    values = measure(args.runs, args.split)
    print(f"{'case':<22} {'mean':>8} {'sd':>7} {'range':>7} {'rel spread of ms':>17}")
    for case_id, series in values.items():
        spread = max(series) - min(series)
        print(f"{case_id:<22} {statistics.fmean(series):8.4f} {statistics.stdev(series):7.4f} {spread:7.4f} "
              f"{10 ** spread - 1:16.1%}")


if __name__ == "__main__":
    main()
