"""ModularRSI findings on toolsim: does evolving five harness modules separately from one
base, then integrating them, beat non-modular evolution (the paper's Table 4: 52.43
modular vs 47.57 base vs 46.44 non-modular) on tasks the evolution never saw?

Runs the loop's own rounds (`tasks/loops/modular_rsi/rounds.py`: the analysis, modifier,
three-check gate and integration the flow's stages call) over the trusted toolsim
simulation in-process, several seeds (each seed is another toolsim world and pool), in
four arms from the same seed harness on the same pool batches:
    base:        the seed harness, never edited
    modular:     findings routed to modules, every module edits the round's base, integration
    monolithic:  the ablation: up to five whole-harness edits a round (one per module slot),
                 chained, each from the last accepted one, under the same gate
    one_sided:   modular without the success/failure contrast (every task diagnosed from
                 its failures only; the paper has no such ablation)
The benchmark is the holdout + test splits: `held_out` templates were never in the pool,
`in_domain` are the pool's templates on cases the pool never held. Pairs are (seed,
case): every arm's harness runs the same cases under the same noise.

    .venv/bin/python benchmarks/modular_rsi_findings.py            # 5 seeds, 4 rounds
    .venv/bin/python benchmarks/modular_rsi_findings.py --quick    # 1 seed, 1 round, tiny suite
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = ("base", "modular", "monolithic", "one_sided")
QUICK, FULL = (5, 1, 1), (20, 4, 5)
"""(instances per template, rounds, seeds) of the quick and the full size."""


def run_seed(seed: int, instances: int, rounds: int) -> dict[str, dict]:
    """Per arm: the benchmark successes by (benchmark, case) and the edits' record."""
    from schemas.modular_rsi import ModularRSIConfig
    from suites.toolsim.suite import ToolSim
    from tasks.harness_loops.documents import literal_document
    from tasks.loops.modular_rsi.evolve import case_literals
    from tasks.loops.modular_rsi.rounds import batch_of, evolve, pool_of
    from tasks.proposers.rule_evidence import trace_of

    config, suite = ModularRSIConfig(), ToolSim(seed=seed, instances_per_template=instances)
    cases = suite.cases()
    seed_doc = literal_document(suite.seed_program())
    pool = set(pool_of([c.payload["template"] for c in cases], config.pool_templates, seed))
    pool_cases = [c for c in cases if c.split == "train" and c.payload["template"] in pool]
    batches = [batch_of(pool_cases, r, config.batch, seed) for r in range(1, rounds + 1)]
    bench = [c for c in cases if c.split in ("holdout", "test")]
    literals = case_literals([c.payload for c in cases if c.payload["template"] in pool])

    def run(document, chosen):
        return {c.case_id: trace_of(c.case_id, c.payload, suite.episode(c, {"harness": document})) for c in chosen}

    out = {}
    for arm in ARMS:
        history = [] if arm == "base" else evolve(seed_doc, batches, run, literals, int(cases[0].payload["max_steps"]),
                                                  modular=arm != "monolithic", min_support=config.min_support,
                                                  contrast=arm != "one_sided")
        harness = history[-1].harness if history else seed_doc
        got = run(harness, bench)
        gated = [g for r in history for g in r.gated]
        out[arm] = {
            "held_out": {c.case_id: float(got[c.case_id].success) for c in bench if c.payload["template"] not in pool},
            "in_domain": {c.case_id: float(got[c.case_id].success) for c in bench if c.payload["template"] in pool},
            "edits": len(gated), "accepted": sum(g.accepted for g in gated),
            "overfit": sum(not g.overfit[0] for g in gated), "conflicts": sum(len(r.conflicts) for r in history),
            "modules": sorted({g.edit.module for g in gated if g.accepted}), "rules": len(harness["rules"]),
        }
    return out


def paired(results: list[dict], arm: str, bench: str) -> list[float]:
    """Per (seed, case), in one order for every arm."""
    return [run[arm][bench][c] for run in results for c in sorted(run[arm][bench])]


def counts_table(results: list[dict]) -> str:
    lines = ["| arm | held-out success | in-domain success | edits gated | accepted | rejected as overfit | "
             "conflicts | modules accepted |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for arm in ARMS:
        held, ind = paired(results, arm, "held_out"), paired(results, arm, "in_domain")
        modules = sorted({m for run in results for m in run[arm]["modules"]})
        lines.append(f"| {arm} | {100 * sum(held) / len(held):.2f} | {100 * sum(ind) / len(ind):.2f} | "
                     f"{sum(r[arm]['edits'] for r in results)} | {sum(r[arm]['accepted'] for r in results)} | "
                     f"{sum(r[arm]['overfit'] for r in results)} | {sum(r[arm]['conflicts'] for r in results)} | "
                     f"{', '.join(modules) or '-'} |")
    return "\n".join(lines)


def measure(instances: int, rounds: int, seeds: int) -> tuple[list[dict], str]:
    started = time.perf_counter()
    results = [run_seed(seed, instances, rounds) for seed in range(seeds)]
    rows = []
    for bench in ("held_out", "in_domain"):
        rows += [paired_row(f"modular vs base ({bench})", "success", "base", paired(results, "base", bench),
                            "modular", paired(results, "modular", bench)),
                 paired_row(f"modular vs non-modular ({bench})", "success", "monolithic",
                            paired(results, "monolithic", bench), "modular", paired(results, "modular", bench)),
                 paired_row(f"contrast ablation ({bench})", "success", "one_sided",
                            paired(results, "one_sided", bench), "modular", paired(results, "modular", bench))]
    header = (f"modular_rsi on toolsim: {seeds} seeds x {rounds} rounds, {instances} instances per template, "
              f"pairs are (seed, benchmark case); {time.perf_counter() - started:.0f} s")
    return results, f"{header}\n\n{counts_table(results)}\n\n{table(rows).replace('| seeds |', '| pairs |')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 round, 5 instances per template")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    instances, rounds, seeds = QUICK if args.quick else FULL
    print(measure(instances, args.rounds or rounds, args.seeds or seeds)[1])


if __name__ == "__main__":
    main()
