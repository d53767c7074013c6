"""Admission control, MedRSI: does slow registration (a trial on later request batches)
keep the stable toolbox better than registering every discovery at once?

Runs the real `medrsi` flow on toolsim over several seeds (each seed is a different
toolsim world: other requests, other noise) in two arms, slow registration (the paper)
and the no-delay ablation, reads the results back from each run's store and prints:
- the tool funnel per arm: discovered -> admitted -> registered -> retired (sums);
- paired rows (benchmarks/paired.py): test-split success of the final stable harness
  vs the seed harness, and slow vs immediate registration.

    .venv/bin/python benchmarks/admission_medrsi.py            # 5 seeds, 10 rounds (about 7 min here)
    .venv/bin/python benchmarks/admission_medrsi.py --quick    # 1 seed, 2 rounds, tiny suite
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

FUNNEL = ("discovered", "admitted", "registered", "retired", "retests", "holdout_drops")
QUICK, FULL = (5, 4), (10, 8)
"""(instances per template, requests per trial batch) of the quick and the full size."""


def run_arm(root: Path, seed: int, slow: bool, rounds: int, instances: int, batch_size: int,
            version: int = 1) -> dict:
    """One medrsi run; its summary, re-read from the run's own store."""
    from flows.medrsi import medrsi
    from schemas.admission import MedRSIConfig
    from schemas.configs import RunConfig
    from storage.store import open_store

    config = RunConfig(loop="medrsi", suite="toolsim", budget=rounds, seed=seed, workers=1, tracking=False,
                       suite_params={"instances_per_template": instances, "seed": seed, "version": version},
                       medrsi=MedRSIConfig(slow_registration=slow, batch_size=batch_size))
    store_uri = str(root / f"{'slow' if slow else 'now'}-{seed}")
    summary = medrsi(config=config, store_uri=store_uri, run_id=f"medrsi-{'slow' if slow else 'now'}-{seed}")
    stables = sorted((r for r in open_store(store_uri).read_rows("registry") if r.name == "toolsim/medrsi"),
                     key=lambda r: r.version)
    assert len(stables) == summary["stable_versions"], "summary and registry disagree"
    holdout = [r.holdout_score for r in stables]
    # a registration that lowered the stable harness's holdout success: the paper's "degraded"
    return {**summary, "holdout_drops": sum(b < a for a, b in zip(holdout, holdout[1:]))}


def funnel_table(results: dict[str, list[dict]]) -> str:
    lines = ["| arm | " + " | ".join(FUNNEL) + " | stable versions |", "| --- |" + " --- |" * (len(FUNNEL) + 1)]
    for arm, runs in results.items():
        counts = [str(sum(r[k] for r in runs)) for k in FUNNEL]
        lines.append(f"| {arm} | " + " | ".join(counts) + f" | {sum(r['stable_versions'] for r in runs)} |")
    return "\n".join(lines)


def measure(root: Path, seeds: int, rounds: int, instances: int, batch_size: int,
            version: int = 1) -> tuple[dict[str, list[dict]], str]:
    """Both arms on every seed; (the run summaries per arm, the markdown report)."""
    started = time.perf_counter()
    results: dict[str, list[dict]] = {"slow": [], "immediate": []}
    for seed in range(seeds):
        results["slow"].append(run_arm(root, seed, True, rounds, instances, batch_size, version))
        results["immediate"].append(run_arm(root, seed, False, rounds, instances, batch_size, version))
    slow, now = results["slow"], results["immediate"]
    rows = [
        paired_row("stable set vs seed harness (slow)", "test success", "seed", [r["seed_test_success"] for r in slow],
                   "stable", [r["test_success"] for r in slow]),
        paired_row("stable set vs seed harness (slow)", "test balanced success", "seed",
                   [r["seed_test_balanced"] for r in slow], "stable", [r["test_balanced"] for r in slow]),
        paired_row("slow vs immediate registration", "test success", "immediate", [r["test_success"] for r in now],
                   "slow", [r["test_success"] for r in slow]),
        paired_row("slow vs immediate registration", "test balanced success", "immediate",
                   [r["test_balanced"] for r in now], "slow", [r["test_balanced"] for r in slow]),
        paired_row("slow vs immediate registration", "holdout success", "immediate",
                   [r["holdout_score"] for r in now], "slow", [r["holdout_score"] for r in slow]),
    ]
    header = (f"medrsi on toolsim: {seeds} seeds x {rounds} rounds, {instances} instances per template, "
              f"batch size {batch_size}, {time.perf_counter() - started:.0f} s, store {root}")
    return results, f"{header}\n\n{funnel_table(results)}\n\n{table(rows)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 2 rounds, 5 instances per template")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5, quick 1)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per run (default 10, quick 2)")
    parser.add_argument("--store", default=None, help="store folder (default: a temporary one)")
    parser.add_argument("--suite-version", type=int, default=1, choices=(1, 2, 3),
                        help="toolsim version (2: side effects, faults.py; 3: also per-tool pagination and truncation, observations.py)")
    args = parser.parse_args()
    seeds = args.seeds or (1 if args.quick else 5)
    rounds = args.rounds or (2 if args.quick else 10)
    instances, batch_size = QUICK if args.quick else FULL
    root = Path(args.store or tempfile.mkdtemp(prefix="medrsi-bench-"))
    prepare_environment(str(root))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    import torch

    torch.set_num_threads(1)
    print(measure(root, seeds, rounds, instances, batch_size, args.suite_version)[1])


if __name__ == "__main__":
    main()
