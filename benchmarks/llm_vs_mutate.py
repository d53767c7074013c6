"""The served model against the non-LLM proposers, paired by seed, at equal evaluations.

(1) `evolve` on bin_packing and circle_packing with `--proposer llm` (the pinned local
    model, `ratchet llm serve`'s server) and with `mutate`, each run with the same
    budget (child programs), rounds, islands and seed. Per suite x proposer: the
    registered champion's select score (best select) and holdout score, the
    parse/apply rate (share of the proposer's children that are programs, not
    `llm_unusable` answers), tokens in/out per candidate and wall seconds per
    candidate (the run's wall time over its children); paired differences llm - mutate
    with a percentile-bootstrap 95% CI and a sign test across seeds.
(2) `self_healing` on toolsim with `proposer: llm` against its rule proposer, paired by
    seed: the champion's select and holdout success and the share of usable rules.

Seeds run one after another (both suites, both proposers per seed) until the next
seed would pass `--minutes`. Every figure is read back from the runs' store. Tokens are
read from the candidate's summary suffix (`tasks.proposers.llm.cost_note`) by
`call_cost`, the one place to switch when `candidates` grows token columns.

    .venv/bin/python benchmarks/llm_vs_mutate.py                 # as many seeds as fit in 30 minutes
    .venv/bin/python benchmarks/llm_vs_mutate.py --quick         # 1 seed, budget 2 (smoke)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.paired import paired_row, table  # noqa: E402

SUITES = ("bin_packing", "circle_packing")


@dataclass(frozen=True)
class Sizes:
    """Children per evolve run, children per round, answer cap, self_healing rounds and seeds."""

    budget: int
    children_per_round: int
    max_tokens: int
    heal_rounds: int
    heal_seeds: int


FULL = Sizes(budget=6, children_per_round=2, max_tokens=384, heal_rounds=3, heal_seeds=2)
QUICK = Sizes(budget=2, children_per_round=1, max_tokens=96, heal_rounds=2, heal_seeds=1)


@dataclass(frozen=True)
class Run:
    loop: str
    suite: str
    proposer: str
    seed: int
    select: float | None
    holdout: float | None
    children: int
    usable: int
    tokens_in: tuple[int, ...]
    tokens_out: tuple[int, ...]
    wall_s: float

    @property
    def wall_per_candidate(self) -> float:
        return self.wall_s / max(self.children, 1)


def read_run(store_uri: str, run_id: str, loop: str, proposer: str, seed: int, wall_s: float) -> Run:
    """The run's champion scores and its proposer-written candidates' counts and costs."""
    from storage.store import open_store
    from tasks.proposers.llm import UNUSABLE
    from tasks.runtime.context import RunRef
    from tasks.runtime.lifecycle import champion_summary

    summary = champion_summary(RunRef(store_uri=store_uri, run_id=run_id))
    children = [c for c in open_store(store_uri).read_rows("candidates", run_id) if c.round > 0]
    costs = [(c.tokens_in, c.tokens_out) for c in children]  # the call's columns (None: no call)
    return Run(loop, str(summary["suite"]), proposer, seed, summary["select_score"], summary["holdout_score"],
               len(children), sum(c.operator != UNUSABLE for c in children),
               tuple(t for t, _ in costs if t is not None), tuple(t for _, t in costs if t is not None), wall_s)


def run_evolve(store_uri: str, suite: str, proposer: str, seed: int, sizes: Sizes) -> Run:
    from flows.evolve import evolve
    from schemas.configs import EvolveConfig, RunConfig

    run_id = f"evolve-{suite}-{proposer}-s{seed}"
    config = RunConfig(loop="evolve", suite=suite, budget=sizes.budget, seed=seed, workers=1, tracking=False,
                       proposer=proposer, evolve=EvolveConfig(children_per_round=sizes.children_per_round, islands=1,
                                                              llm_max_tokens=sizes.max_tokens))
    started = time.monotonic()
    evolve(config=config, store_uri=store_uri, run_id=run_id)
    return read_run(store_uri, run_id, "evolve", proposer, seed, time.monotonic() - started)


def run_self_healing(store_uri: str, proposer: str, seed: int, sizes: Sizes) -> Run:
    from flows.self_healing import self_healing
    from schemas.configs import EvolveConfig, RunConfig

    run_id = f"self_healing-{proposer}-s{seed}"
    config = RunConfig(loop="self_healing", suite="toolsim", budget=sizes.heal_rounds, seed=seed, workers=1,
                       tracking=False, proposer=proposer, suite_params={"instances_per_template": 10, "seed": seed},
                       evolve=EvolveConfig(llm_max_tokens=sizes.max_tokens))
    started = time.monotonic()
    self_healing(config=config, store_uri=store_uri, run_id=run_id)
    label = "llm" if proposer == "llm" else "rule"
    return read_run(store_uri, run_id, "self_healing", label, seed, time.monotonic() - started)


def _mean(values: Sequence[float], digits: int = 4) -> str:
    return f"{fmean(values):.{digits}f}" if values else "-"


def suite_table(runs: Sequence[Run]) -> str:
    """Per loop/suite x proposer, means over seeds."""
    lines = ["| loop | suite | proposer | seeds | best select | holdout | parse/apply | tokens in/cand | "
             "tokens out/cand | wall s/cand |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    groups = sorted({(r.loop, r.suite, r.proposer) for r in runs})
    for loop, suite, proposer in groups:
        mine = [r for r in runs if (r.loop, r.suite, r.proposer) == (loop, suite, proposer)]
        children, usable = sum(r.children for r in mine), sum(r.usable for r in mine)
        tokens_in = [t for r in mine for t in r.tokens_in]
        tokens_out = [t for r in mine for t in r.tokens_out]
        lines.append(
            f"| {loop} | {suite} | {proposer} | {len(mine)} | {_mean([r.select for r in mine if r.select is not None])} "
            f"| {_mean([r.holdout for r in mine if r.holdout is not None])} | {usable}/{children} | "
            f"{_mean(tokens_in, 1)} | {_mean(tokens_out, 1)} | "
            f"{fmean(r.wall_per_candidate for r in mine):.1f} |")
    return "\n".join(lines)


def paired_table(runs: Sequence[Run], a: str, b: str, loop: str, suites: Sequence[str]) -> str:
    """B - A on the seeds both proposers finished, per suite, for select and holdout."""
    rows = []
    for suite in suites:
        by = {(r.proposer, r.seed): r for r in runs if r.loop == loop and r.suite == suite}
        seeds = sorted(s for p, s in by if p == a and (b, s) in by)
        for metric in ("select", "holdout"):
            pairs = [(getattr(by[a, s], metric), getattr(by[b, s], metric)) for s in seeds]
            pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
            if pairs:
                rows.append(paired_row(f"{loop} {suite}", metric, a, [x for x, _ in pairs], b, [y for _, y in pairs]))
    return table(rows)


def measure(store_uri: str, sizes: Sizes, minutes: float, max_seeds: int) -> tuple[list[Run], list[Run]]:
    """Evolve seeds until the next one would pass the time budget, then the paired
    self_healing seeds."""
    evolve_runs: list[Run] = []
    started = time.monotonic()
    for seed in range(max_seeds):
        seed_started = time.monotonic()
        evolve_runs += [run_evolve(store_uri, suite, proposer, seed, sizes)
                        for suite in SUITES for proposer in ("mutate", "llm")]
        took = time.monotonic() - seed_started
        print(f"evolve seed {seed}: {took:.0f} s", flush=True)
        if time.monotonic() - started + took > minutes * 60:
            break
    heal_runs = [run_self_healing(store_uri, proposer, seed, sizes) for seed in range(sizes.heal_seeds)
                 for proposer in ("mutate", "llm")]
    return evolve_runs, heal_runs


def report(evolve_runs: Sequence[Run], heal_runs: Sequence[Run], sizes: Sizes, model: str) -> str:
    return "\n\n".join([
        f"Model {model}; evolve budget {sizes.budget} children ({sizes.children_per_round} per round, 1 island), "
        f"llm_max_tokens {sizes.max_tokens}; self_healing {sizes.heal_rounds} rounds.",
        suite_table([*evolve_runs, *heal_runs]),
        "Paired by seed, llm - mutate:\n\n" + paired_table(evolve_runs, "mutate", "llm", "evolve", SUITES),
        "Paired by seed, llm - rule:\n\n" + paired_table(heal_runs, "rule", "llm", "self_healing", ("toolsim",)),
    ])


def serve(log: Path):
    """The endpoint in RATCHET_LLM_BASE_URL, or a fresh llama.cpp server on the pinned model."""
    from tasks.proposers import llama_server
    from tasks.proposers.local_models import DEFAULT_MODEL, cache_dir, resolve_model_file

    if os.environ.get("RATCHET_LLM_BASE_URL") and os.environ.get("RATCHET_LLM_MODEL"):
        return None, os.environ["RATCHET_LLM_MODEL"]
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process, served = llama_server.start(Path(resolve_model_file(DEFAULT_MODEL, cache_dir())), port=port, log=log)
    os.environ.update(RATCHET_LLM_BASE_URL=served.base_url, RATCHET_LLM_MODEL=served.model)
    return process, served.model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 seed, budget 2, 96-token answers (smoke)")
    parser.add_argument("--minutes", type=float, default=30.0, help="start no evolve seed that would end past this")
    parser.add_argument("--max-seeds", type=int, default=10)
    args = parser.parse_args()
    sizes, max_seeds = (QUICK, 1) if args.quick else (FULL, args.max_seeds)
    store_uri = tempfile.mkdtemp(prefix="ratchet-llm-vs-mutate-")
    from cli.env import prepare_environment

    prepare_environment(store_uri)
    process, model = serve(Path(store_uri) / "llama-server.log")
    load, started = os.getloadavg(), time.monotonic()
    try:
        evolve_runs, heal_runs = measure(store_uri, sizes, args.minutes, max_seeds)
    finally:
        if process is not None:
            from tasks.proposers import llama_server

            llama_server.stop(process)
    print(report(evolve_runs, heal_runs, sizes, model))
    print(f"\n{time.monotonic() - started:.0f} s in all on {os.cpu_count()} cores; load average (1/5/15 min) "
          f"{' '.join(f'{x:.2f}' for x in load)} at the start, {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"at the end.")


if __name__ == "__main__":
    main()
