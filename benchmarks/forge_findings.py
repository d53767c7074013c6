"""FORGE findings on toolsim: held-out success of the prompt (the agent's rules) the loop
keeps, with and without the data gate's verified synthesis, paired per held-out task over
several seeds (each seed a new world: its own cases and noise), at the same number of
optimisation steps.

It composes the loop's pure functions (batch, failure modes, rule reflector, prompt gate,
stagnation, synthesis + verifier) step by step as the flow's stages do, without the store.

Paper table shape: the average before (the seed prompt) and after optimisation, and the
gain synthesis adds at a matched step budget (the paper: +2-9 points for every APO setup).
Ablations the spec's design implies: synthesis with only the `same_failure` strategy (not
the four), and synthesis without the verifier (every generated instance admitted). The
generation and verification episodes are reported beside the gain (the paper's caveat:
equal steps do not cover their cost).

    .venv/bin/python benchmarks/forge_findings.py            # 8 seeds, 20 instances/template
    .venv/bin/python benchmarks/forge_findings.py --quick    # 3 seeds, 10 instances/template
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

ARMS = ("seed", "no_synthesis", "synthesis", "same_failure_only", "unverified")
HELDOUT = ("holdout", "test")
SEED_HARNESS = {"version": 1, "rules": [], "skills": []}


def scores(payloads: dict, harness) -> list[float]:
    from tasks.loops.forge.synth import run_trace

    return [float(run_trace(i, payloads[i], harness).success) for i in sorted(payloads)]


def optimise(suite, seed: int, steps: int, batch: int, patience: int, synthesis: bool,
             strategies: tuple[str, ...], verified: bool = True, top: int = 3) -> tuple[dict, dict]:
    """(the kept prompt's harness, cost counts) of one run of the loop (module docstring)."""
    from schemas.ids import seed_for
    from tasks.loops.forge.modes import abstract, ranked
    from tasks.loops.forge.prompt import batch_of, mean, prompt_gate, rule_reflector, stagnation
    from tasks.loops.forge.synth import run_trace, synthesize

    cases = suite.cases()
    pool = {c.case_id: c.payload for c in cases if c.split == "train"}
    val = {c.case_id: c.payload for c in cases if c.split == "select"}
    prompt, memory, inst_of = SEED_HARNESS, {}, {}
    best = val_now = mean(scores(val, prompt))
    since, cost = 0, {"eval": 0, "gen": 0, "verify": 0, "admitted": 0}
    for step in range(steps):
        ids = batch_of(list(pool), batch, random.Random(seed_for(seed, "batch", step)))
        traces = [(f"{step}/{i}", run_trace(i, pool[i], prompt)) for i in ids]
        inst_of.update({tid: t.case_id for tid, t in traces})
        memory = abstract(memory, [(tid, t) for tid, t in traces if not t.success])
        cost["eval"] += len(ids)
        revised = rule_reflector([t for _, t in traces], prompt, random.Random(seed_for(seed, "reflect", step)))
        if revised is not None and not all(t.success for _, t in traces):
            new_batch = mean([float(run_trace(i, pool[i], revised).success) for i in ids])
            cost["eval"] += len(ids)
            old_batch = mean([float(t.success) for _, t in traces])
            val_new = mean(scores(val, revised)) if new_batch > old_batch else None
            cost["eval"] += len(val) if val_new is not None else 0
            if prompt_gate(new_batch, old_batch, val_new, val_now).accepted:
                prompt, val_now = revised, val_new
        state = stagnation(best, since, val_now, patience)
        best, since = state.best_val, 0 if state.synthesize else state.steps_since_improve
        if state.synthesize and synthesis:
            made = synthesize(ranked(memory, top), pool, inst_of, prompt, strategies, 1, seed, step, set(pool))
            admitted = [m for m in made if m.admitted or not verified]
            pool.update({m.inst_id: m.payload for m in admitted})
            cost["gen"] += len(made)
            cost["verify"] += sum(m.check.calls for m in made)
            cost["admitted"] += len(admitted)
    return prompt, cost


def measure(seeds: int, instances: int, steps: int = 10, batch: int = 8, patience: int = 2) -> tuple[dict, dict]:
    """(arm -> per held-out task success, tasks of every seed in the same order; arm -> cost)."""
    from schemas.forge import STRATEGIES
    from suites.toolsim.suite import ToolSim

    found = {arm: [] for arm in ARMS}
    costs = {arm: {"eval": 0, "gen": 0, "verify": 0, "admitted": 0} for arm in ARMS}
    for seed in range(seeds):
        suite = ToolSim(seed=seed, instances_per_template=instances)
        held = {c.case_id: c.payload for c in suite.cases() if c.split in HELDOUT}
        arms = {"no_synthesis": (False, STRATEGIES, True), "synthesis": (True, STRATEGIES, True),
                "same_failure_only": (True, ("same_failure",), True), "unverified": (True, STRATEGIES, False)}
        found["seed"] += scores(held, SEED_HARNESS)
        for arm, (synth, strategies, verified) in arms.items():
            prompt, cost = optimise(suite, seed, steps, batch, patience, synth, strategies, verified)
            found[arm] += scores(held, prompt)
            costs[arm] = {k: costs[arm][k] + v for k, v in cost.items()}
    return found, costs


COMPARISONS = (("seed", "no_synthesis"), ("seed", "synthesis"), ("no_synthesis", "synthesis"),
               ("same_failure_only", "synthesis"), ("unverified", "synthesis"))


def rows_of(found) -> list:
    return [paired_row(f"{b} vs {a}", "held-out success", a, found[a], b, found[b]) for a, b in COMPARISONS]


def headline(found, costs) -> str:
    lines = ["| prompt kept | held-out success | prompt episodes | generated | verifier episodes | admitted |",
             "| --- | --- | --- | --- | --- | --- |"]
    for arm in ARMS:
        c = costs[arm]
        lines.append(f"| {arm} | {100 * fmean(found[arm]):.1f}% | {c['eval']} | {c['gen']} | {c['verify']} | "
                     f"{c['admitted']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--instances", type=int, default=20, help="instances per template (8 templates)")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    seeds, instances = (3, 10) if args.quick else (args.seeds, args.instances)
    start = time.time()
    found, costs = measure(seeds, instances, steps=args.steps)
    text = (f"{seeds} seeds (worlds), {len(found['seed'])} held-out tasks (holdout + test splits) in all; "
            f"{args.steps} steps, batch 8, patience 2; paired per task, the table's 'seeds' column counts tasks "
            f"({time.time() - start:.0f} s)\n\n{headline(found, costs)}\n\n{table(rows_of(found))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
