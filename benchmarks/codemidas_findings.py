"""CodeMidas findings: does the filtered environment set grade better than the unfiltered
one? (The paper: 3,000 clean tasks beat 8,000 uncleaned ones; here no solver is trained,
so "better" is measured on each environment's held-out tests, which no filter read.)

Per fuzz seed, every candidate function of the pool is constructed as the `codemidas`
loop does (`tasks.loops.codemidas.construct`, in the subprocess sandbox). The unfiltered
set is every environment that got tests (it reached gate 1); the filtered set is the
kept ones. Per environment, on the held-out tests:

- reliable: gate 1's verdict (original passes, stub fails, trivial mutants killed) holds
- mutation score: share of the mutants the held-out tests kill
- false positives: share of the weak-solver attempts that passed every select test but
  fail a held-out one (the reviewer's `false_positive`)
- reward spread: the population std of the attempts' select rewards (GRPO's signal)

Printed: yield per stage and leaks caught (the paper's outcome), then filtered −
unfiltered per metric, paired over seeds (the same pool and fuzz seed on both sides;
95% bootstrap CI, `tasks.gate.stats`), and kept − dropped environments pooled (unpaired).

    .venv/bin/python benchmarks/codemidas_findings.py                 # the whole pool, 3 seeds
    .venv/bin/python benchmarks/codemidas_findings.py --modules colorsys dataclasses --seeds 2
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from statistics import fmean, pstdev

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from schemas.configs import SandboxConfig  # noqa: E402
from suites.codemidas.ship import SOURCES, pool  # noqa: E402
from suites.executors import make_executor  # noqa: E402
from tasks.gate.stats import paired_bootstrap_ci, unpaired_bootstrap_ci  # noqa: E402
from tasks.loops.codemidas.construct import construct  # noqa: E402
from tasks.loops.codemidas.filters import NOT_ATTEMPTS  # noqa: E402

METRICS = ("reliable", "mutation_score", "false_positives", "reward_spread")
STAGES = ("probe", "derive", "gate1", "leak", "gate2", "kept")


def env_metrics(found: dict) -> dict | None:
    """The held-out metrics of one constructed environment (None: it got no tests)."""
    if not found["checks"]:
        return None
    holdout = next(c for c in found["checks"] if c["split"] == "holdout")
    weak = [a for a in found["attempts"] if a["solver"] not in NOT_ATTEMPTS]
    return {"cand_id": found["candidate"]["cand_id"], "kept": found["candidate"]["stage_reached"] == "kept",
            "reliable": float(found["evidence"]["holdout_holds"]), "mutation_score": holdout["mutation_score"],
            "false_positives": fmean(a["reviewer_verdict"] == "false_positive" for a in weak),
            "reward_spread": pstdev([a["select_pass"] for a in weak])}


def set_difference(envs: list[dict], metric: str) -> float:
    """Filtered (kept) − unfiltered (all) mean of ``metric`` over one seed's environments."""
    return fmean(e[metric] for e in envs if e["kept"]) - fmean(e[metric] for e in envs)


def comparisons(per_seed: dict[int, list[dict]]) -> list[dict]:
    """Per metric: filtered − unfiltered paired over seeds, and kept − dropped pooled."""
    seeds = [s for s, envs in sorted(per_seed.items()) if any(e["kept"] for e in envs)]
    pooled = [e for s in seeds for e in per_seed[s]]
    out = []
    for metric in METRICS:
        diffs = [set_difference(per_seed[s], metric) for s in seeds]
        kept = [e[metric] for e in pooled if e["kept"]]
        dropped = [e[metric] for e in pooled if not e["kept"]]
        out.append({"metric": metric, "filtered": fmean(kept), "unfiltered": fmean(e[metric] for e in pooled),
                    "delta": fmean(diffs), "ci": paired_bootstrap_ci(diffs), "seeds": len(seeds),
                    "dropped": fmean(dropped) if dropped else None,
                    "kept_minus_dropped": (fmean(kept) - fmean(dropped)) if dropped else None,
                    "kd_ci": unpaired_bootstrap_ci(kept, dropped) if dropped else None})
    return out


def build(modules: list[str], seeds: list[int], n_tests: int, site_limit: int) -> tuple[dict, Counter, int]:
    """(per-seed environment metrics, stage counts, leaks caught) of the pool."""
    executor = make_executor(SandboxConfig(timeout_s=2.0))
    ids = pool({m: names for m, names in SOURCES.items() if not modules or m in modules})
    per_seed, stages, leaks = {}, Counter(), 0
    for seed in seeds:
        per_seed[seed] = []
        for cid in ids:
            found = construct(executor, cid, seed, n_tests, site_limit, drop_leaky=False)
            stages[found["candidate"]["stage_reached"]] += 1
            leaks += any(a["leak_found"] for a in found["attempts"])
            metrics = env_metrics(found)
            if metrics is not None:
                per_seed[seed].append(metrics)
    return per_seed, stages, leaks


def report(per_seed: dict, stages: Counter, leaks: int) -> list[dict]:
    total = sum(stages.values())
    print(f"candidates {total} ({len(per_seed)} seeds): " + ", ".join(f"{s} {stages[s]}" for s in STAGES)
          + f"; leaks caught (retrieval passes) {leaks}")
    rows = comparisons(per_seed)
    print(f"{'held-out metric':<16} {'filtered':>8} {'unfiltered':>10}  filtered − unfiltered (paired over seeds)"
          f"   kept − dropped (pooled)")
    for r in rows:
        kd = "n/a (nothing dropped after tests)" if r["dropped"] is None else \
            f"{r['kept_minus_dropped']:+.3f} [{r['kd_ci'][0]:+.3f}, {r['kd_ci'][1]:+.3f}]"
        print(f"{r['metric']:<16} {r['filtered']:>8.3f} {r['unfiltered']:>10.3f}  "
              f"{r['delta']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}] ({r['seeds']} seeds)   {kd}")
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", nargs="*", default=[], help="restrict the pool to these modules")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-tests", type=int, default=24)
    parser.add_argument("--site-mutants", type=int, default=12)
    args = parser.parse_args(argv)
    return report(*build(args.modules, list(range(args.seeds)), args.n_tests, args.site_mutants))


if __name__ == "__main__":
    main()
