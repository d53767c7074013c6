"""Admission control, Designer-RSI: does expanding the skill library (gaps), deepening it
(failing items), or both, raise test-split success over the seed harness?

Runs the real `designer_rsi` flow on toolsim over several seeds (each seed is a
different toolsim world: other requests, other noise) in three modes (expansion_only,
revision_only, both), reads the results back from each run's store and prints:
- per mode: edits published / rejected by pool (expand, deepen), final library size;
- paired rows (benchmarks/paired.py): test success of the final library vs the seed
  harness in each mode, and both vs each single mode.

    .venv/bin/python benchmarks/admission_designer.py            # 3 seeds, 8 rounds
    .venv/bin/python benchmarks/admission_designer.py --quick    # 1 seed, 1 round, tiny suite
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

MODES = ("expansion_only", "revision_only", "both")
QUICK, FULL = (5, 8), (20, 8)
"""(instances per template, requests per traffic batch) of the quick and the full size."""


def test_success(store, candidate_id: str) -> float:
    values = [s.value for s in store.read_rows("scores") if s.candidate_id == candidate_id
              and s.split == "test" and s.metric == "success"]
    return sum(values) / len(values)


def run_mode(root: Path, seed: int, mode: str, rounds: int, instances: int, batch: int, version: int = 1) -> dict:
    """One designer_rsi run; its counts and test success, read back from its store."""
    from flows.designer_rsi import designer_rsi
    from schemas.admission import DesignerConfig
    from schemas.configs import RunConfig
    from storage.store import open_store

    config = RunConfig(loop="designer_rsi", suite="toolsim", budget=rounds, seed=seed, workers=1, tracking=False,
                       suite_params={"instances_per_template": instances, "seed": seed, "version": version},
                       designer=DesignerConfig(mode=mode, traffic_batch=batch))
    store_uri = str(root / f"{mode}-{seed}")
    summary = designer_rsi(config=config, store_uri=store_uri, run_id=f"designer-{mode}-{seed}")
    store = open_store(store_uri)
    registry = sorted(store.read_rows("registry"), key=lambda r: r.version)
    decisions = [d for d in store.read_rows("gate_decisions") if d.gate == "designer_rsi_replay"]
    return {
        "seed_test_success": test_success(store, registry[0].candidate_id),
        "test_success": test_success(store, registry[-1].candidate_id),
        "accepted": sum(d.decision == "accept" for d in decisions),
        "rejected": sum(d.decision == "reject" for d in decisions),
        "published": summary["published"], "rejected_by_pool": summary["rejected"],
        "library_size": summary["library_size"],
    }


def counts_table(results: dict[str, list[dict]]) -> str:
    lines = ["| mode | published (expand / deepen) | rejected (expand / deepen) | final library size (per seed) |",
             "| --- | --- | --- | --- |"]
    for mode, runs in results.items():
        pub = [sum(r["published"][p] for r in runs) for p in ("expand", "deepen")]
        rej = [sum(r["rejected_by_pool"][p] for r in runs) for p in ("expand", "deepen")]
        sizes = ", ".join(str(r["library_size"]) for r in runs)
        lines.append(f"| {mode} | {pub[0]} / {pub[1]} | {rej[0]} / {rej[1]} | {sizes} |")
    return "\n".join(lines)


def measure(root: Path, seeds: int, rounds: int, instances: int, batch: int,
            version: int = 1) -> tuple[dict[str, list[dict]], str]:
    """Every mode on every seed; (the results per mode, the markdown report)."""
    started = time.perf_counter()
    results: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for seed in range(seeds):
        for mode in MODES:
            results[mode].append(run_mode(root, seed, mode, rounds, instances, batch, version))

    def success(mode: str) -> list[float]:
        return [r["test_success"] for r in results[mode]]

    rows = [paired_row(f"{mode} vs seed harness", "test success", "seed",
                       [r["seed_test_success"] for r in results[mode]], mode, success(mode)) for mode in MODES]
    rows += [paired_row(f"both vs {mode}", "test success", mode, success(mode), "both", success("both"))
             for mode in MODES[:2]]
    header = (f"designer_rsi on toolsim: {seeds} seeds x {rounds} rounds, {instances} instances per template, "
              f"traffic batch {batch}, {time.perf_counter() - started:.0f} s, store {root}")
    return results, f"{header}\n\n{counts_table(results)}\n\n{table(rows)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 round, 5 instances per template")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 3, quick 1)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per run (default 8, quick 1)")
    parser.add_argument("--store", default=None, help="store folder (default: a temporary one)")
    parser.add_argument("--suite-version", type=int, default=1, choices=(1, 2, 3),
                        help="toolsim version (2: side effects, faults.py; 3: also per-tool pagination and truncation, observations.py)")
    args = parser.parse_args()
    seeds = args.seeds or (1 if args.quick else 3)
    rounds = args.rounds or (1 if args.quick else 8)
    instances, batch = QUICK if args.quick else FULL
    root = Path(args.store or tempfile.mkdtemp(prefix="designer-bench-"))
    prepare_environment(str(root))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    import torch

    torch.set_num_threads(1)
    print(measure(root, seeds, rounds, instances, batch, args.suite_version)[1])


if __name__ == "__main__":
    main()
