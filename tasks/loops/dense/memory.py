"""DENSE's memory as an artifact, and the comparisons the gate records (pure).

Memory gate. A task's memory is a feedback document of ``memory_method`` (a candidate
whose id is its content hash). The candidate is the document written from repeat 0's
initial trajectory (chosen before any outcome is seen); it is retried under every
repeat's retry noise next to the task's current memory (the store's champion of
``toolsim/dense/<task>``, from any earlier run, or no feedback when there is none), on
the same noise. Accept iff its strict pass rate is higher, or equal with fewer tool
calls; a candidate identical to the champion is rejected as nothing new. Only select
tasks are gated.

Method comparison. Per method, the mean strict pass (and tool calls) per task over
repeats, paired with ``none`` on the same tasks, a task-bootstrap 95% CI of the mean
difference: ``accept`` when the CI excludes 0 upwards, else ``reject`` (which is not
equivalence). Over select tasks only, as every gate here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from statistics import fmean
from typing import Iterable, Mapping, Sequence

from tasks.gate.stats import paired_bootstrap_ci


@dataclass(frozen=True)
class Trial:
    """One retry of a memory under one repeat's noise."""

    repeat: int
    passed: bool
    tool_calls: int


@dataclass(frozen=True)
class MemoryVerdict:
    decision: str
    reason: str
    delta_pass: float
    delta_calls: float
    candidate_pass: float
    baseline_pass: float


def memory_verdict(candidate: Sequence[Trial], baseline: Sequence[Trial], same_content: bool) -> MemoryVerdict:
    """The memory gate's decision on paired trials (same repeats, same noise)."""
    if [t.repeat for t in candidate] != [t.repeat for t in baseline] or not candidate:
        raise ValueError("dense memory gate: candidate and baseline trials must pair on the same repeats")
    c_pass, b_pass = fmean(t.passed for t in candidate), fmean(t.passed for t in baseline)
    c_calls, b_calls = fmean(t.tool_calls for t in candidate), fmean(t.tool_calls for t in baseline)
    dp, dc = c_pass - b_pass, c_calls - b_calls
    if same_content:
        decision, why = "reject", "the candidate is the current memory (same content id)"
    elif dp > 0 or (dp == 0 and dc < 0):
        decision, why = "accept", f"strict pass {b_pass:.2f} -> {c_pass:.2f}, tool calls {b_calls:.1f} -> {c_calls:.1f}"
    else:
        decision, why = "reject", (f"not better: strict pass {b_pass:.2f} -> {c_pass:.2f}, tool calls "
                                   f"{b_calls:.1f} -> {c_calls:.1f}")
    return MemoryVerdict(decision, f"{decision}: {why} over {len(candidate)} repeats", dp, dc, c_pass, b_pass)


@dataclass(frozen=True)
class Comparison:
    method: str
    tasks: tuple[str, ...]
    delta_pass: float
    ci_low: float
    ci_high: float
    delta_calls: float
    calls_ci: tuple[float, float]
    improved: tuple[str, ...]
    regressed: tuple[str, ...]
    method_pass: float
    baseline_pass: float


def per_task(rows: Iterable[tuple[str, str, float, float]]) -> dict[str, dict[str, tuple[float, float]]]:
    """(method, task, passed, tool_calls) rows -> method -> task -> (mean pass, mean calls)."""
    grouped: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    for method, task, passed, calls in rows:
        grouped[(method, task)].append((float(passed), float(calls)))
    out: dict[str, dict[str, tuple[float, float]]] = defaultdict(dict)
    for (method, task), values in grouped.items():
        out[method][task] = (fmean(v[0] for v in values), fmean(v[1] for v in values))
    return dict(out)


def compare(means: Mapping[str, Mapping[str, tuple[float, float]]], method: str, baseline: str = "none",
            resamples: int = 2000, seed: int = 0) -> Comparison:
    """``method`` − ``baseline`` paired over the tasks both have."""
    tasks = tuple(sorted(set(means[method]) & set(means[baseline])))
    dp = [means[method][t][0] - means[baseline][t][0] for t in tasks]
    dc = [means[method][t][1] - means[baseline][t][1] for t in tasks]
    low, high = paired_bootstrap_ci(dp, resamples=resamples, seed=seed)
    return Comparison(method, tasks, fmean(dp) if dp else float("nan"), low, high, fmean(dc) if dc else float("nan"),
                      paired_bootstrap_ci(dc, resamples=resamples, seed=seed),
                      tuple(t for t, d in zip(tasks, dp) if d > 0), tuple(t for t, d in zip(tasks, dp) if d < 0),
                      fmean(means[method][t][0] for t in tasks) if tasks else float("nan"),
                      fmean(means[baseline][t][0] for t in tasks) if tasks else float("nan"))
