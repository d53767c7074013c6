"""EvoAlloc findings: the self-revising allocator (evoalloc) vs the fixed initial policy
(fixed) vs one revision adopted without a shadow trial (one_shot), paired by seed.

Every run is the real `evoalloc` flow on one store; the arms of a seed share the seed, so
their generator draws and their first round's allocations are the same. Every figure is
read back from the run's `evoalloc_allocation` and `evoalloc_run` distillates:
    full evaluations to target: the Full evaluations (counterfactuals and the seed program
        included) spent when the best-so-far first reaches the seed's target, the lowest
        final best over the arms (so every arm reaches it; the paper's "same target");
    best at equal full budget: the best-so-far after F Full evaluations, F the fewest any
        arm of the seed spent;
    Full + Partial evaluations: all evaluations the run spent (a promoted child counts 2).

    .venv/bin/python benchmarks/evoalloc_findings.py                 # 5 seeds, bin_packing
    .venv/bin/python benchmarks/evoalloc_findings.py --quick         # 2 seeds, 2 rounds
    .venv/bin/python benchmarks/evoalloc_findings.py --suite circle_packing
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = ("fixed", "one_shot", "evoalloc")


def run_arm(store_uri: str, suite: str, arm: str, seed: int, rounds: int, children: int) -> dict:
    """One evoalloc run -> its summary record (curve, evaluation counts, best)."""
    from flows.evoalloc import evoalloc
    from schemas.configs import RunConfig
    from storage.store import open_store

    config = RunConfig(loop="evoalloc", suite=suite, budget=rounds, seed=seed, tracking=False, workers=2,
                       evoalloc={"arm": arm, "children_per_round": children})
    run_id = f"evoalloc-{suite}-{arm}-s{seed}"
    evoalloc(config=config, store_uri=store_uri, run_id=run_id)
    rows = open_store(store_uri).read_part("distillates", run_id, "finish", "run")
    return json.loads(rows[0].content)


def best_after(curve: list[list], full_evals: int) -> float:
    """Best-so-far after `full_evals` Full evaluations (curve: [evals so far, best])."""
    return max(best for n, best in curve if n <= full_evals)


def seed_metrics(records: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per arm of one seed: full evaluations to the seed's target, best at the seed's
    equal full budget, Full + Partial evaluations."""
    from tasks.loops.evoalloc.logic import evals_to_target

    target = min(r["best_score"] for r in records.values())
    budget = min(r["full_evals"] for r in records.values())
    return {arm: {"to_target": float(evals_to_target([tuple(p) for p in r["curve"]], target)),
                  "best_at_budget": best_after(r["curve"], budget),
                  "evaluations": float(r["full_evals"] + r["partial_evals"]),
                  "full_evals": float(r["full_evals"]), "target": target}
            for arm, r in records.items()}


def rows(metrics: dict[int, dict[str, dict[str, float]]], suite: str) -> list:
    seeds = sorted(metrics)
    out = []
    for key, label in (("to_target", "Full evaluations to target"), ("best_at_budget", "best at equal Full budget"),
                       ("evaluations", "Full + Partial evaluations")):
        for base in ("fixed", "one_shot"):
            out.append(paired_row(f"evoalloc vs {base} ({suite})", label, base,
                                  [metrics[s][base][key] for s in seeds], "evoalloc",
                                  [metrics[s]["evoalloc"][key] for s in seeds]))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 rounds of 3 children (smoke)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--children", type=int, default=4)
    parser.add_argument("--suite", default="bin_packing", choices=("bin_packing", "circle_packing"))
    parser.add_argument("--store", default=None, help="store to run in (default: a new temporary folder)")
    args = parser.parse_args(argv)
    seeds, rounds, children = ([0, 1], 2, 3) if args.quick else (list(range(args.seeds)), args.rounds, args.children)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-evoalloc-findings-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    metrics = {s: seed_metrics({arm: run_arm(store_uri, args.suite, arm, s, rounds, children) for arm in ARMS})
               for s in seeds}
    per_seed = "\n".join(f"seed {s}: target {m['fixed']['target']:.4f}; " + ", ".join(
        f"{arm} to-target {m[arm]['to_target']:.0f} / full {m[arm]['full_evals']:.0f} / all {m[arm]['evaluations']:.0f}"
        for arm in ARMS) for s, m in metrics.items())
    head = f"{args.suite}, seeds {seeds}; {rounds} rounds x {children} children; store {store_uri}"
    print("\n\n".join([head, per_seed, "Paired by seed (B = evoalloc):", table(rows(metrics, args.suite))]))


if __name__ == "__main__":
    main()
