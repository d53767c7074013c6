"""DENSE findings on toolsim (REFIT protocol): every feedback method from the same initial
trajectory, every retry on the same fresh noise, paired per task (mean over repeats).

Paper table shape:
  1. strict pass of the retry over the initial run (pp, 95% CI) and retry cost relative
     to the initial run (the paper: retry tokens; here retry tool calls), per method;
  2. the ablation: full tree vs without shortcut and reconciliation (tree_nsr) vs
     without hierarchy (flat);
  3. the issue's question: the unlabelled tree against outcome-labelled feedback
     (the rule proposer reading the hidden verdict) on the same trajectories.
The paper's numbers: +7.12–15.64 pp over the initial run, retry tokens −19.0–43.6%;
GPT-5.5 ablation full 75.66%, w/o shortcut and reconciliation 72.28%, w/o hierarchy
72.66%.

    .venv/bin/python benchmarks/dense_findings.py            # 160 tasks x 3 repeats
    .venv/bin/python benchmarks/dense_findings.py --quick    # 40 tasks x 2 repeats
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import fmean

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

METHODS = ("none", "raw", "flat", "tree", "tree_nsr", "labelled")


def measure(instances: int, repeats: int, seed: int = 0) -> dict[str, dict[str, tuple[float, float]]]:
    """arm ("initial" or a method) -> task -> (mean strict pass, mean tool calls) over repeats."""
    from suites.toolsim.suite import ToolSim
    from tasks.loops.dense.memory import per_task
    from tasks.loops.dense.refit import feedback, initial_attempt, retry_attempt

    rows = []
    for case in ToolSim(seed=seed, instances_per_template=instances).cases():
        for repeat in range(repeats):
            first = initial_attempt(case, seed, repeat)
            rows.append(("initial", case.case_id, first.evaluation.success, first.tool_calls))
            for method in METHODS:
                episode = retry_attempt(case, feedback(method, case, first, seed, 2, repeat), seed, repeat)
                rows.append((method, case.case_id, episode.evaluation.success, episode.tool_calls))
    return per_task(rows)


def _column(found, arm: str, index: int, tasks) -> list[float]:
    return [found[arm][t][index] for t in tasks]


def rows_of(found) -> list:
    tasks = sorted(found["initial"])
    out = []
    for method in METHODS:
        out.append(paired_row(f"{method} retry vs initial", "strict pass", "initial",
                              _column(found, "initial", 0, tasks), method, _column(found, method, 0, tasks)))
        out.append(paired_row(f"{method} retry vs initial", "tool calls", "initial",
                              _column(found, "initial", 1, tasks), method, _column(found, method, 1, tasks)))
    for a, b in (("none", "tree"), ("tree_nsr", "tree"), ("flat", "tree"), ("raw", "tree"), ("tree", "labelled")):
        for index, metric in ((0, "strict pass"), (1, "tool calls")):
            out.append(paired_row(f"{b} vs {a}", metric, a, _column(found, a, index, tasks), b,
                                  _column(found, b, index, tasks)))
    return out


def headline(found) -> str:
    tasks = sorted(found["initial"])
    init_pass = fmean(_column(found, "initial", 0, tasks))
    init_calls = fmean(_column(found, "initial", 1, tasks))
    lines = ["| method | strict pass | over initial (pp) | retry tool calls vs initial |", "| --- | --- | --- | --- |",
             f"| initial | {100 * init_pass:.2f}% | — | {init_calls:.2f} calls |"]
    for method in METHODS:
        p, c = fmean(_column(found, method, 0, tasks)), fmean(_column(found, method, 1, tasks))
        lines.append(f"| {method} | {100 * p:.2f}% | {100 * (p - init_pass):+.2f} | "
                     f"{100 * (c - init_calls) / init_calls:+.1f}% |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--instances", type=int, default=20, help="instances per template (8 templates)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    instances, repeats = (5, 2) if args.quick else (args.instances, args.repeats)
    start = time.time()
    found = measure(instances, repeats)
    text = (f"{8 * instances} tasks x {repeats} repeats, paired per task (mean over repeats); the table's "
            f"'seeds' column counts tasks ({time.time() - start:.0f} s)\n\n{headline(found)}\n\n"
            f"{table(rows_of(found))}")
    print(text)
    return text


if __name__ == "__main__":
    main()
