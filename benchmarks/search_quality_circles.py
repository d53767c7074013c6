"""The circle_packing part of ``benchmarks/search_quality.py`` (issue 14): the `grammar`
proposer's structure search with Optuna TPE on a structure's constants, from
circle_packing's seed program, against random-restart SLSQP run for the same wall time,
paired over seeds.

One evaluation = one candidate's ``construct_packing(26)`` run in the sandbox
(``SubprocessExecutor``, the suite's train case) and scored by the suite's trusted
scorer (an invalid packing or a failed run is 0). The grammar method keeps its
``POPULATION`` best programs and draws parents by tournament of 2 (two parents with
probability ``crossover_rate``). The proposer is given every scored program as its
history, as the sample stage gives it in a run, so its ``circle_tpe`` children
(probability ``tune_rate``) take their constants from Optuna TPE over the scored
programs of the parent's structure (each within 2 of its mutation steps, inside its
bounds; each one counted evaluation, ``tasks/proposers/constant_search.py``). Seeds run two at a time (2 cores), and each seed's wall time is recorded.

The baseline, per seed and for that seed's wall time, two at a time as well: SLSQP
(the same ``slsqp`` and LP radii the rendered programs use, at most ``BASELINE_ITERATIONS``
iterations) from uniformly random centres, restarted until the time is up, in-process
(no sandbox cost, which favours it); its best packing is re-checked by the same scorer.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np

from benchmarks.paired import paired_row, table
from schemas.configs import EvolveConfig
from schemas.ids import content_id
from suites.circle_packing import BEST_KNOWN, RUNNER_SOURCE, SEED_PROGRAM, CirclePacking
from suites.executors.subprocess import SubprocessExecutor
from tasks.proposers import circle_program as cp
from tasks.proposers.base import ParentInfo, ProposerError
from tasks.proposers.grammar_proposer import GrammarProposer

N = 26
POPULATION = 8
MAX_FAILED_DRAWS = 200
"""A search stops after this many draws in a row that gave no new program."""
BASELINE_ITERATIONS = 500
TARGET = 2.63


class CircleEvaluator:
    """Runs ``construct_packing(26)`` programs in the sandbox and scores them."""

    def __init__(self) -> None:
        self.suite, self.executor = CirclePacking(n=N), SubprocessExecutor()
        self.case = [c for c in self.suite.cases() if c.split == "train"]

    def sum_radii(self, program: str) -> float:
        """The trusted scorer's sum of radii; 0.0 for an invalid packing or a failed run."""
        (result,) = self.executor.run(program, RUNNER_SOURCE, self.suite.entrypoint, self.case)
        if result.status != "ok":
            return 0.0
        verdict = self.suite.score(self.case[0], result.output)
        return verdict.metrics["sum_radii"] if verdict.valid else 0.0


def search(evaluator: CircleEvaluator, evaluations: int, seed: int) -> tuple[str, float, float]:
    """(best program, its sum of radii, wall seconds) of a grammar search of ``evaluations`` evaluations."""
    started = time.perf_counter()
    rng = random.Random(seed)
    config = EvolveConfig(crossover_rate=0.3)
    proposer = GrammarProposer(config)
    scored = {SEED_PROGRAM: evaluator.sum_radii(SEED_PROGRAM)}
    used, failed = 1, 0
    while used < evaluations and failed < MAX_FAILED_DRAWS:
        population = sorted(scored, key=scored.get, reverse=True)[:POPULATION]
        parents = [max(rng.sample(population, min(2, len(population))), key=scored.get)]
        if len(population) > 1 and rng.random() < config.crossover_rate:
            parents.append(max(rng.sample(population, 2), key=scored.get))
        history = [ParentInfo(content_id(p), p, v) for p, v in scored.items()]
        try:
            child = proposer.propose([ParentInfo(content_id(p), p, scored[p]) for p in parents], rng,
                                     history=history).source
        except ProposerError:
            failed += 1
            continue
        if child not in scored:
            scored[child] = evaluator.sum_radii(child)
            used, failed = used + 1, 0
        else:
            failed += 1
    best = max(scored, key=scored.get)
    return best, scored[best], time.perf_counter() - started


def random_restart_slsqp(seconds: float, seed: int) -> tuple[float, int]:
    """(best valid sum of radii, restarts) of SLSQP from uniform random centres for ``seconds``."""
    namespace: dict = {}
    exec(compile(cp.render(cp.SEED_STRUCTURE), "<structure>", "exec"), namespace)
    suite, case = CirclePacking(n=N), CirclePacking(n=N).cases()[0]
    rng, best, restarts = np.random.default_rng(seed), 0.0, 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        centers = namespace["slsqp"](rng.uniform(0.0, 1.0, (N, 2)), BASELINE_ITERATIONS)
        radii = namespace["optimal_radii"](centers)
        verdict = suite.score(case, {"centers": centers.tolist(), "radii": radii.tolist()})
        best = max(best, verdict.metrics["sum_radii"] if verdict.valid else 0.0)
        restarts += 1
    return best, restarts


def _baseline(job: tuple[float, int]) -> tuple[float, int]:
    return random_restart_slsqp(*job)


def run(seeds: int, evaluations: int) -> str:
    """The circle_packing table: grammar vs random-restart SLSQP at each seed's wall time."""
    evaluator = CircleEvaluator()
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        found = list(pool.map(lambda s: search(evaluator, evaluations, s), range(seeds)))
    with ProcessPoolExecutor(max_workers=2) as pool:
        baseline = list(pool.map(_baseline, [(wall, 1000 + s) for s, (_, _, wall) in enumerate(found)]))
    row = paired_row(f"circle_packing n={N}", "sum of radii", "random-restart SLSQP", [b for b, _ in baseline],
                     "grammar", [f[1] for f in found], digits=5)
    lines = [f"- seed {s}: grammar {f[1]:.5f} in {f[2]:.0f} s; SLSQP {b:.5f} ({r} restarts); best: "
             f"{cp.describe(cp.structure_of(f[0]))}" for s, (f, (b, r)) in enumerate(zip(found, baseline))]
    reached = sum(f[1] >= TARGET for f in found)
    best = max(f[1] for f in found)
    return (f"circle_packing n={N}, {evaluations} evaluations per seed for grammar, random-restart SLSQP for "
            f"the same wall time, {seeds} seeds, {time.perf_counter() - started:.0f} s\n\n{table([row])}\n\n"
            + "\n".join(lines) + f"\n\ngrammar reached {TARGET} in {reached} of {seeds} seeds; best {best:.8f} "
            f"(best known {BEST_KNOWN[N]:.10f}: {'reached' if best >= BEST_KNOWN[N] - 1e-7 else 'not reached'} "
            "within 1e-7)\n")


