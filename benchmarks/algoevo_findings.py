"""AlgoEvo findings: evaluations to reach a target on the held-out task with the skill
promoted from the source tasks vs the initial skill, code inheritance off, paired by seed.

Every run is the real `algoevo` flow on one store. Per seed:
    promoted: the full task order (sources, then the held-out task), the held-out task
        loading the skill the last gate produced;
    initial:  the held-out task alone, with the initial skill (every family at weight 1).
Both start the held-out task from its suite's seed program (inheritance off) and draw
their children from the same seeded streams (keyed by task and evaluation index), so a
seed where no pattern was promoted gives two identical searches. Figures, read back from
`ae_task_runs` and the run summary's best-so-far curve of the held-out task:
    evaluations to target: child evaluations until the best-so-far reaches the seed's
        target, the lowest final best over the two arms (so both reach it; 0 when neither
        beat the seed program);
    evaluations to first improvement over the seed program (budget + 1 when none);
    final best select score after the budget.

    .venv/bin/python benchmarks/algoevo_findings.py                    # 3 seeds, 20 evaluations per task
    .venv/bin/python benchmarks/algoevo_findings.py --quick            # 1 seed, 1 evaluation per task
    .venv/bin/python benchmarks/algoevo_findings.py --seeds 5 --budget 40
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

SUITE = "circle_packing+bin_packing+lasso"
ORDER = ("circle_packing", "lasso", "bin_packing")
CASE_CPU_S = 2.0
"""CPU seconds per case (the default is 10): every seed program needs well under 1 s a case,
and a mutated lasso solver that stops converging would otherwise spend 10 s on each."""


def run_arm(store_uri: str, arm: str, seed: int, budget: int, order: tuple[str, ...]) -> dict:
    """One algoevo run -> the held-out task's record and the promoted patterns."""
    from flows.algoevo import algoevo
    from schemas.configs import RunConfig
    from storage.store import open_store

    tasks = order if arm == "promoted" else order[-1:]
    config = RunConfig(loop="algoevo", suite=SUITE, budget=budget, seed=seed, tracking=False, workers=2,
                       algoevo={"tasks": tasks}, sandbox={"timeout_s": CASE_CPU_S})
    run_id = f"algoevo-{arm}-s{seed}-b{budget}"
    summary = algoevo(config=config, store_uri=store_uri, run_id=run_id)
    store = open_store(store_uri)
    promoted = sorted({p.family for p in store.read_rows("ae_patterns", run_id) if p.promoted})
    return {**summary["tasks"][-1], "promoted": promoted}


def first_improvement(record: dict, budget: int) -> int:
    """Child evaluations until the best-so-far first beats the seed program (budget + 1: never)."""
    better = [i for i, b in enumerate(record["curve"]) if b > record["root_score"]]
    return better[0] if better else budget + 1


def seed_metrics(records: dict[str, dict], budget: int) -> dict[str, dict[str, float]]:
    """Per arm of one seed: evaluations to the seed's common target, to the first
    improvement over the seed program, and the final best."""
    from tasks.loops.algoevo.logic import evals_to_reach

    target = min(r["curve"][-1] for r in records.values())
    return {arm: {"to_target": float(evals_to_reach(r["curve"], target)),
                  "to_improvement": float(first_improvement(r, budget)),
                  "final_best": r["curve"][-1], "target": target}
            for arm, r in records.items()}


def rows(metrics: dict[int, dict[str, dict[str, float]]], task: str) -> list:
    seeds = sorted(metrics)
    return [paired_row(f"promoted vs initial skill ({task}, held out)", label, "initial",
                       [metrics[s]["initial"][key] for s in seeds], "promoted",
                       [metrics[s]["promoted"][key] for s in seeds])
            for key, label in (("to_target", "evaluations to target"),
                               ("to_improvement", "evaluations to first improvement"),
                               ("final_best", "final best select score"))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 evaluation per task (smoke)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=20, help="child evaluations per task")
    parser.add_argument("--store", default=None, help="store to run in (default: a new temporary folder)")
    args = parser.parse_args(argv)
    seeds, budget = ([0], 1) if args.quick else (list(range(args.seeds)), args.budget)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    store_uri = args.store or tempfile.mkdtemp(prefix="ratchet-algoevo-findings-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    records = {s: {arm: run_arm(store_uri, arm, s, budget, ORDER) for arm in ("promoted", "initial")} for s in seeds}
    metrics = {s: seed_metrics(r, budget) for s, r in records.items()}
    per_seed = "\n".join(
        f"seed {s}: promoted patterns {records[s]['promoted']['promoted'] or 'none'}; root "
        f"{records[s]['initial']['root_score']:.4f}, target {m['initial']['target']:.4f}; " + ", ".join(
            f"{arm} to-target {m[arm]['to_target']:.0f} / first improvement {m[arm]['to_improvement']:.0f} / "
            f"best {m[arm]['final_best']:.4f}" for arm in ("initial", "promoted")) for s, m in metrics.items())
    head = f"held-out {ORDER[-1]} after {', '.join(ORDER[:-1])}; seeds {seeds}; {budget} evaluations per task; " \
           f"code inheritance off; store {store_uri}"
    print("\n\n".join([head, per_seed, "Paired by seed (B = promoted skill):", table(rows(metrics, ORDER[-1]))]))


if __name__ == "__main__":
    main()
