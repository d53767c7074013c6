"""MASS findings on toolsim: does behaviour-cloning an evolved multi-role workflow into
one small policy (the workflow removed from its inputs) carry the workflow's gains to
held-out cases, and what do the spec's comparisons show?

Runs the loop's own pure functions (`tasks.loops.mass.loop.generation` / `distill`, the
offline optimizer `tasks.loops.mass.llm.RuleOptimizer`, `tasks.loops.mass.policy`) on the
same seeds; each seed is another toolsim world (requests, noise) and mutation stream.
Per seed: G inner generations from the single-agent workflow, then
    policy-distilled:    cloned from the lineage's filtered runs (the config defaults)
    policy-final-only:   cloned from the final workflow's runs only (`mass.lineage=false`)
    policy-single-agent: cloned from the single-agent workflow's runs with 1.4x the
                         repeats (the paper's single-agent student on ~1.4x the tokens)
and the optimizer check: the evolved vs the seed workflow, both run by the old policy
(the single-agent student), judged pairwise per held-out case (paper: new preferred 64%).
Outcome: held-out success and tool calls per case. Pairs are (seed, held-out case).

    .venv/bin/python benchmarks/mass_findings.py            # 5 seeds x 12 generations
    .venv/bin/python benchmarks/mass_findings.py --quick    # 1 seed x 1 generation, tiny suite
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from benchmarks.paired import paired_row, table  # noqa: E402
from schemas.mass import MassConfig  # noqa: E402

BASE = MassConfig()
QUICK, FULL = 5, 20
"""Instances per template."""
MODELS = ("workflow-seed", "workflow-evolved", "policy-distilled", "policy-final-only", "policy-single-agent")


def clone(examples, epochs: int, lr: float):
    from suites.toolsim.templates import TEMPLATES
    from tasks.harness_loops.menu import OPTION_IDS
    from tasks.loops.mass import policy as pol

    policy = pol.make_policy(list(TEMPLATES), len(OPTION_IDS))
    pol.behaviour_clone(policy, [e.template for e in examples], [e.target for e in examples], epochs, lr)
    return policy


def run_seed(seed: int, generations: int, instances: int) -> dict:
    from suites.toolsim.suite import ToolSim
    from tasks.loops.mass.llm import RuleOptimizer
    from tasks.loops.mass.loop import distill, generation, judge, run_policy, run_workflow
    from tasks.loops.mass.workflow import Workflow

    cases = ToolSim(seed=seed, instances_per_template=instances).cases()
    train, held = [c for c in cases if c.split == "train"], [c for c in cases if c.split == "holdout"]
    propose, wf, lineage = RuleOptimizer(seed, BASE.children, BASE.max_roles), Workflow(), [Workflow()]
    for g in range(1, generations + 1):
        wf = generation(wf, train, propose, g).chosen
        if wf not in lineage:
            lineage.append(wf)
    examples = {"policy-distilled": distill(lineage, train, BASE.repeats, seed)[0],
                "policy-final-only": distill([wf], train, BASE.repeats, seed)[0],
                "policy-single-agent": distill([Workflow()], train, math.ceil(1.4 * BASE.repeats), seed)[0]}
    runs = {"workflow-seed": run_workflow(Workflow(), held), "workflow-evolved": run_workflow(wf, held)}
    for name, ex in examples.items():
        runs[name] = run_policy(clone(ex, BASE.epochs, BASE.lr), held)
    old = clone(examples["policy-single-agent"], BASE.epochs, BASE.lr)
    new_on_old, seed_on_old = run_policy(old, held, wf), run_policy(old, held, Workflow())
    verdicts = [judge(a, b) for a, b in zip(new_on_old, seed_on_old)]
    return {"success": {m: {e.case_id: float(e.success) for e in r} for m, r in runs.items()},
            "calls": {m: {e.case_id: float(e.calls) for e in r} for m, r in runs.items()},
            "preference": [{"a": 1.0, "b": 0.0, "tie": 0.5}[v] for v in verdicts], "workflow": wf.spec_json(),
            "examples": {k: len(v) for k, v in examples.items()}}


def paired(results: list[dict], metric: str, model: str) -> list[float]:
    return [run[metric][model][c] for run in results for c in sorted(run[metric][model])]


def counts_table(results: list[dict]) -> str:
    lines = ["| model | held-out success | tool calls per case | success per 10 calls |", "| --- | --- | --- | --- |"]
    for m in MODELS:
        s, c = fmean(paired(results, "success", m)), fmean(paired(results, "calls", m))
        lines.append(f"| {m} | {s:.3f} | {c:.2f} | {10 * s / c:.3f} |")
    return "\n".join(lines)


def preference_line(results: list[dict]) -> str:
    from tasks.gate.stats import paired_bootstrap_ci

    prefs = [p for run in results for p in run["preference"]]
    wins, losses = prefs.count(1.0), prefs.count(0.0)
    decided = [p for p in prefs if p != 0.5]
    rate = fmean(decided) if decided else float("nan")
    low, high = paired_bootstrap_ci([p - 0.5 for p in decided]) if decided else (float("nan"),) * 2
    return (f"optimizer check (evolved vs seed workflow, both run by the old policy; paper 64%): preferred in "
            f"{wins} of {wins + losses} decided held-out comparisons ({len(prefs) - len(decided)} ties) = {rate:.3f}, "
            f"95% CI [{0.5 + low:.3f}, {0.5 + high:.3f}]")


def measure(seeds: int, generations: int, instances: int) -> tuple[list[dict], str]:
    started = time.perf_counter()
    results = [run_seed(seed, generations, instances) for seed in range(seeds)]
    s = {m: paired(results, "success", m) for m in MODELS}
    c = {m: paired(results, "calls", m) for m in MODELS}
    rows = [paired_row("distilled policy vs evolved workflow (student carries the workflow)", "held-out success",
                       "workflow-evolved", s["workflow-evolved"], "policy-distilled", s["policy-distilled"]),
            paired_row("distilled policy vs evolved workflow", "tool calls", "workflow-evolved", c["workflow-evolved"],
                       "policy-distilled", c["policy-distilled"]),
            paired_row("evolved vs single-agent workflow (inner loop)", "held-out success", "workflow-seed",
                       s["workflow-seed"], "workflow-evolved", s["workflow-evolved"]),
            paired_row("multi-agent vs single-agent student (paper: multi wins on ~1/1.4 the tokens)",
                       "held-out success", "policy-single-agent", s["policy-single-agent"], "policy-distilled",
                       s["policy-distilled"]),
            paired_row("ablation: distil the final workflow only vs the lineage", "held-out success",
                       "policy-final-only", s["policy-final-only"], "policy-distilled", s["policy-distilled"])]
    header = (f"mass on toolsim: {seeds} seeds x {generations} generations, {instances} instances per template, "
              f"{BASE.children} children per generation, {BASE.repeats} distillation repeats; pairs are "
              f"(seed, held-out case); {time.perf_counter() - started:.0f} s\nevolved workflows: "
              + "; ".join(r["workflow"] for r in results))
    return results, (f"{header}\n\n{counts_table(results)}\n\n{table(rows).replace('| seeds |', '| pairs |')}\n\n"
                     f"{preference_line(results)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, 1 generation, 5 instances per template")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5, quick 1)")
    parser.add_argument("--generations", type=int, default=None, help="inner generations (default 12, quick 1)")
    args = parser.parse_args()
    seeds = args.seeds or (1 if args.quick else 5)
    generations = args.generations or (1 if args.quick else 12)
    print(measure(seeds, generations, QUICK if args.quick else FULL)[1])


if __name__ == "__main__":
    main()
