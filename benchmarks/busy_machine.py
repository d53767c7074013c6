"""Limits measure the candidate, not the machine: the demo's runs on an idle machine and
on one with two busy loops beside them give the same champions and gate decisions.

It runs `ratchet demo`'s two evolve runs (circle_packing, then bin_packing, the configs
of `cli.demo.run_demo`: seed 0, the demo's sandbox timeout) into a fresh temporary store,
once as the machine is and once with two `python -c 'while True: pass'` processes
running beside them (killed at the end), then prints per run and condition the wall
time, executions and timeouts, whether the champions (registry events) and the gate
decisions are identical, and the wall-time ratio busy / idle. Prefect's server start is
excluded (a warm-up run starts it first).

    .venv/bin/python benchmarks/busy_machine.py                            # the demo's budgets (300, 24)
    .venv/bin/python benchmarks/busy_machine.py --budget 60 --bin-budget 8  # quicker
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cli.env import prepare_environment  # noqa: E402

SUITES = ("circle_packing", "bin_packing")
HOGS = 2


@dataclass(frozen=True)
class RunOutcome:
    """What one evolve run decided and what it cost."""

    suite: str
    wall_s: float
    executions: int
    timeouts: int
    timeout_limits: tuple[tuple[str, int], ...]
    """How many timeouts each limit gave: ("cpu" | "wall" | "other", count), sorted."""
    champions: tuple[tuple[int, str], ...]
    """(registry version, candidate_id) of every registry event, in version order."""
    decisions: tuple[tuple[int, str, str], ...]
    """(round, candidate_id, decision) of every gate decision, sorted."""


def demo_configs(budget: int, bin_budget: int) -> list:
    """The RunConfigs of `cli.demo.run_demo`, in its order."""
    from cli.demo import DEMO_TIMEOUT_S
    from schemas.configs import RunConfig, SandboxConfig

    sandbox = SandboxConfig(timeout_s=DEMO_TIMEOUT_S)
    return [
        RunConfig(loop="evolve", suite="circle_packing", budget=budget, seed=0, sandbox=sandbox),
        RunConfig(loop="evolve", suite="bin_packing", budget=bin_budget, seed=0, sandbox=sandbox),
    ]


def run_one(store_uri: str, config, run_id: str) -> RunOutcome:
    from flows import LOOPS
    from storage.store import open_store

    started = time.perf_counter()
    LOOPS[config.loop](config=config, store_uri=store_uri, run_id=run_id)
    wall_s = time.perf_counter() - started
    store = open_store(store_uri)
    executions = store.read_rows("executions", run_id)
    statuses = Counter(row.status for row in executions)
    limits = Counter(_limit_of(row.error or "") for row in executions if row.status == "timeout")
    registry = sorted(store.read_rows("registry", run_id), key=lambda row: row.version)
    decisions = sorted((row.round, row.candidate_id, row.decision) for row in store.read_rows("gate_decisions", run_id))
    return RunOutcome(
        suite=config.suite,
        wall_s=wall_s,
        executions=sum(statuses.values()),
        timeouts=statuses["timeout"],
        timeout_limits=tuple(sorted(limits.items())),
        champions=tuple((row.version, row.candidate_id) for row in registry),
        decisions=tuple(decisions),
    )


def _limit_of(error: str) -> str:
    """Which limit a timeout's error names."""
    return "cpu" if "CPU-time limit" in error else "wall" if "wall-clock limit" in error else "other"


def run_demo_pair(store_uri: str, budget: int, bin_budget: int) -> list[RunOutcome]:
    """Both demo runs into ``store_uri``, with the same run ids in every store."""
    return [run_one(store_uri, config, f"busy-bench-{config.suite}") for config in demo_configs(budget, bin_budget)]


@contextmanager
def busy_loops(n: int = HOGS) -> Iterator[list[subprocess.Popen]]:
    """``n`` processes spinning on the CPU for as long as the block runs."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def warm_up(root: str) -> None:
    """Start Prefect's ephemeral server (and import everything) outside the timings."""
    from flows import LOOPS
    from schemas.configs import RunConfig

    config = RunConfig(loop="evolve", suite="spin", budget=2, seed=0, suite_params={"ms": 1.0, "cases": 8})
    LOOPS["evolve"](config=config, store_uri=os.path.join(root, "warmup"), run_id="busy-bench-warmup")


def compare(budget: int, bin_budget: int, root: str) -> dict:
    """Both conditions, each into a fresh store under ``root``: the outcomes and the
    verdicts. Prefect must be set up (``prepare_environment``, a server) beforehand."""
    idle = run_demo_pair(os.path.join(root, "idle"), budget, bin_budget)
    with busy_loops() as hogs:
        busy = run_demo_pair(os.path.join(root, "busy"), budget, bin_budget)
        hogs_survived = all(hog.poll() is None for hog in hogs)
    return {
        "idle": idle,
        "busy": busy,
        "hogs_survived": hogs_survived,
        "champions_identical": [a.champions for a in idle] == [b.champions for b in busy],
        "decisions_identical": [a.decisions for a in idle] == [b.decisions for b in busy],
        "wall_ratio": sum(b.wall_s for b in busy) / sum(a.wall_s for a in idle),
    }


def report(result: dict) -> str:
    lines = [f"{'run':<16} {'condition':<9} {'wall s':>8} {'executions':>10} {'timeouts':>8} {'by limit':<14} champion"]
    for condition in ("idle", "busy"):
        for outcome in result[condition]:
            champion = outcome.champions[-1][1][:12] if outcome.champions else "-"
            by_limit = " ".join(f"{name}:{count}" for name, count in outcome.timeout_limits) or "-"
            lines.append(
                f"{outcome.suite:<16} {condition:<9} {outcome.wall_s:8.1f} {outcome.executions:10d} "
                f"{outcome.timeouts:8d} {by_limit:<14} v{len(outcome.champions)} {champion}"
            )
    yes = {True: "yes", False: "NO"}
    lines += [
        f"busy loops ran throughout: {yes[result['hogs_survived']]} ({HOGS} on {os.cpu_count()} cores)",
        f"champions identical: {yes[result['champions_identical']]}",
        f"gate decisions identical: {yes[result['decisions_identical']]} "
        f"({', '.join(str(len(o.decisions)) for o in result['idle'])} decisions)",
        f"timeouts idle / busy: {sum(o.timeouts for o in result['idle'])} / {sum(o.timeouts for o in result['busy'])}",
        f"wall-time ratio busy / idle: {result['wall_ratio']:.2f}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=int, default=300, help="circle_packing children (the demo's: 300)")
    parser.add_argument("--bin-budget", type=int, default=24, help="bin_packing children (the demo's: 24)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ratchet-busy-") as root:
        prepare_environment(os.path.join(root, "prefect-store"))
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
        warm_up(root)
        result = compare(args.budget, args.bin_budget, root)
    print(report(result))
    return result


if __name__ == "__main__":
    main()
