"""`ratchet loops` and `ratchet suites`: what can be run, on what, and what it measures."""

from __future__ import annotations

from collections import Counter

from rich.console import Console

from schemas.configs import RunConfig
from schemas.loops import LOOP_SPECS, config_class

SPLITS = ("train", "select", "holdout", "protected", "test")
SUITE_LOOPS = {"circle_packing": "evolve", "bin_packing": "evolve", "lasso": "evolve", "spin": "evolve",
               "codemidas": "evolve", "openevolve": "evolve", "pde1d": "evolve", "toolsim": "self_healing",
               "arith": "grpo"}
"""A loop that runs on each suite: the suite is built as that loop's run would build it."""


def print_loops(console: Console) -> None:
    """Per loop: name, what it modifies, suites (default first), what --budget counts
    and its default (and the budget caps, where the loop checks them), the sections `--set`
    may address, then the paper."""
    for spec in LOOP_SPECS.values():
        sections = ", ".join(sorted(config_class(spec.name).sections()))
        caps = f"\n{'':<17}budget caps: --max-evaluations N, --max-llm-tokens N" if spec.budget_caps else ""
        console.print(f"[bold]{spec.name:<16}[/] modifies {spec.modifies:<8} suites: {' | '.join(spec.suites)}\n"
                      f"{'':<17}--budget: {spec.budget_counts} (default {spec.default_budget}){caps}\n"
                      f"{'':<17}--set sections: {sections}\n"
                      f"{'':<17}[dim]{spec.paper}[/]", highlight=False)
    console.print("\nRun one:  ratchet run LOOP [--suite SUITE] [--budget N] [--set SECTION.FIELD=VALUE]")


def suite_rows() -> list[dict[str, str]]:
    """One row per suite: name, cases per split, what a candidate is, the reference."""
    from tasks.runtime.context import make_suite

    rows = []
    for name, loop in SUITE_LOOPS.items():
        suite = make_suite(RunConfig(loop=loop, suite=name, budget=1), name)
        counts = Counter(case.split for case in suite.cases())
        rows.append({"suite": name, "cases": ", ".join(f"{split} {counts[split]}" for split in SPLITS if counts[split]),
                     "candidate": suite.candidate, "reference": suite.reference,
                     "loops": ", ".join(n for n, s in LOOP_SPECS.items() if name in s.suites)})
    return rows


def print_suites(console: Console) -> None:
    """Per suite: cases per split, what a candidate is, what it is measured against."""
    for row in suite_rows():
        console.print(f"[bold]{row['suite']}[/]  ({row['cases']})  loops: {row['loops']}\n"
                      f"  candidate: {row['candidate']}\n  measured against: {row['reference']}", highlight=False)
    console.print("\nThe gate sees only select cases; only registered champions run on holdout. "
                  "Suite parameters: --param KEY=VALUE.")
