"""The protocol's statistics, pure: per-task paired differences with task-bootstrap CIs,
the cost audit (uncached input re-derived per arm, re-priced at frozen prices, missing
usage bounded) and the pre-registered subgroup label-permutation test."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from tasks.gate.stats import paired_bootstrap_ci, paired_differences


@dataclass(frozen=True)
class Run:
    """One (arm, task, seed) run as the scores hold it; usage is None when missing."""

    arm: str
    task: str
    seed: int
    metrics: Mapping[str, float]
    usage: Mapping[str, float] | None
    execution_id: str = ""


@dataclass(frozen=True)
class Difference:
    metric: str
    mean_a: float
    mean_b: float
    delta: float
    ci: tuple[float, float]
    n_tasks: int

    @property
    def shown(self) -> bool:
        """The CI excludes 0. A CI that includes 0 does not show equivalence."""
        return not (self.ci[0] <= 0.0 <= self.ci[1])


def task_means(runs: Sequence[Run], arm: str, metric: str) -> dict[str, float]:
    """Per task, the arm's mean of ``metric`` over its seeds."""
    values: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.arm == arm:
            values[run.task].append(run.metrics[metric])
    return {task: sum(v) / len(v) for task, v in values.items()}


def paired_difference(runs: Sequence[Run], a: str, b: str, metric: str, resamples: int, seed: int) -> Difference:
    """b − a on ``metric``, paired per task (seeds averaged inside a task), with a
    percentile task-bootstrap 95% CI."""
    means_a, means_b = task_means(runs, a, metric), task_means(runs, b, metric)
    tasks, diffs = paired_differences(means_b, means_a)
    ci = paired_bootstrap_ci(diffs, resamples=resamples, seed=seed)
    mean = lambda m: sum(m[t] for t in tasks) / len(tasks)  # noqa: E731
    return Difference(metric, mean(means_a), mean(means_b), sum(diffs) / len(diffs), ci, len(tasks))


def priced(usage: Mapping[str, float], cache_included: bool, prices: Mapping[str, float]) -> float:
    """A run's cost at frozen list prices (per 1k tokens): input re-derived as uncached
    (the reported input minus the cached prompt when the harness counted it in)."""
    uncached = usage["in_tok"] - (usage["cached_tok"] if cache_included else 0.0)
    return (uncached * prices["in"] + usage["cached_tok"] * prices["cached"] + usage["out_tok"] * prices["out"]) / 1000


def run_costs(runs: Sequence[Run], cache_included: Mapping[str, bool], prices: Mapping[str, float],
              fill: str) -> list[float]:
    """Each run's cost; a missing one filled per arm with 0 (``low``), the arm's mean
    observed cost (``mid``) or its largest (``high``)."""
    observed: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.usage is not None:
            observed[run.arm].append(priced(run.usage, cache_included[run.arm], prices))
    filler = {arm: {"low": 0.0, "mid": sum(c) / len(c), "high": max(c)}[fill] for arm, c in observed.items()}
    return [priced(r.usage, cache_included[r.arm], prices) if r.usage is not None else filler.get(r.arm, 0.0)
            for r in runs]


def cost_per_solved(runs: Sequence[Run], costs: Sequence[float], arm: str) -> float:
    """The arm's total cost over its solved runs (inf when it solved none)."""
    total = sum(c for r, c in zip(runs, costs) if r.arm == arm)
    solved = sum(r.metrics["success"] for r in runs if r.arm == arm)
    return total / solved if solved else math.inf


@dataclass(frozen=True)
class CostAudit:
    per_solved: dict[str, dict[str, float]]
    """arm -> {low, mid, high}: cost per solved task under each filling of missing usage."""
    ratio: float
    """b / a at the ``mid`` filling."""
    ratio_bounds: tuple[float, float]
    """The ratio's range over every filling: (b low / a high, b high / a low)."""
    ratio_ci: tuple[float, float]
    """Task-bootstrap 95% CI of the ratio (``mid`` filling)."""
    missing: dict[str, int]


def cost_audit(runs: Sequence[Run], a: str, b: str, cache_included: Mapping[str, bool],
               prices: Mapping[str, float], resamples: int, seed: int) -> CostAudit:
    fills = {fill: run_costs(runs, cache_included, prices, fill) for fill in ("low", "mid", "high")}
    per = {arm: {fill: cost_per_solved(runs, costs, arm) for fill, costs in fills.items()} for arm in (a, b)}
    ratio = per[b]["mid"] / per[a]["mid"]
    bounds = (per[b]["low"] / per[a]["high"], per[b]["high"] / per[a]["low"])
    missing = {arm: sum(r.usage is None for r in runs if r.arm == arm) for arm in (a, b)}
    return CostAudit(per, ratio, bounds, _ratio_ci(runs, fills["mid"], a, b, resamples, seed), missing)


def _ratio_ci(runs: Sequence[Run], costs: Sequence[float], a: str, b: str, resamples: int,
              seed: int) -> tuple[float, float]:
    """Resample tasks (both arms' runs of a task together); ratio of summed cost per solved."""
    tasks = sorted({r.task for r in runs})
    index = {t: i for i, t in enumerate(tasks)}
    sums = np.zeros((2, 2, len(tasks)))  # arm (a, b) x (cost, solved) x task
    for run, cost in zip(runs, costs):
        if run.arm in (a, b):
            side = 0 if run.arm == a else 1
            sums[side, 0, index[run.task]] += cost
            sums[side, 1, index[run.task]] += run.metrics["success"]
    picks = np.random.default_rng(seed).integers(0, len(tasks), size=(resamples, len(tasks)))
    drawn = sums[:, :, picks].sum(axis=3)  # arm x (cost, solved) x resample
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = (drawn[1, 0] / drawn[1, 1]) / (drawn[0, 0] / drawn[0, 1])
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return (math.nan, math.nan)
    return (float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975)))


def group_permutation_p(diffs: Mapping[str, float], group_of: Mapping[str, str], resamples: int,
                        seed: int) -> tuple[float, float]:
    """(observed, p): the difference of the mean per-task effect between the two groups
    and its two-sided label-permutation p-value, ``(1 + #|perm| >= |obs|) / (1 + R)``."""
    tasks = sorted(diffs)
    labels = sorted({group_of[t] for t in tasks})
    if len(labels) != 2:
        raise ValueError(f"the subgroup test needs tasks in two groups, got {labels}")
    d = np.array([diffs[t] for t in tasks])
    first = np.array([group_of[t] == labels[0] for t in tasks])
    observed = float(d[first].mean() - d[~first].mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    for _ in range(resamples):
        shuffled = rng.permutation(first)
        extreme += abs(d[shuffled].mean() - d[~shuffled].mean()) >= abs(observed) - 1e-12
    return observed, (1 + extreme) / (1 + resamples)
