"""MedRSI: fast discovery into an experimental pool, slow registration after a trial.

Paper's rule, in two stages:
1. Fast discovery: a gain on the discovery set admits the candidate tool to an
   experimental pool, its code, weights, dependencies and reference version frozen.
2. Slow registration: compare the stable system with and without the tool on the same
   3 subsequent patient batches; register iff the mean task gain over the 3 batches
   exceeds a threshold AND the clinical cost does not increase. Not every batch has to
   improve (and this is no statistical guarantee). If the stable toolbox changed during
   the trial, re-test in the current environment first.

Decisions: `trial` (admitted to / still in the trial, or to be re-tested), `accept`
(register to stable), `reject` (discard).

Choices where the paper is silent:
- discovery gain: the paired mean of with − without over the discovery cases must exceed
  `min_gain` (default 0.0, any gain). Values may be per-case scores, or per-class recalls
  so that their mean is the paper's balanced accuracy.
- registration threshold default 0.0: any positive mean gain, strictly; the cost rule is
  mean cost with ≤ mean cost without (a tie does not increase it).
- the trial weighs the first `n_batches` (default 3) batches after admission, in order;
  with fewer it stays in `trial`, so an empty trial is `trial`, not `reject`.
- "the stable toolbox changed" is a stable-set version at admission other than the
  current one. The decision is then `trial` with reason "re-test against the current
  stable set", whatever the batches say: their baseline is no longer the stable system.
  The caller re-freezes the tool against the current version and runs a fresh trial."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any, Collection, Mapping, Sequence

from tasks.gate.best_so_far import CASE_TOL, GateOutcome, check_anchor
from tasks.gate.evidence import dump_evidence, no_evidence, require_finite
from tasks.gate.stats import paired_bootstrap_ci, paired_differences

DISCOVERY_GATE = "medrsi_discovery"
TRIAL_GATE = "medrsi_registration"


@dataclass(frozen=True)
class FrozenTool:
    """What the experimental pool freezes at admission; recorded in every decision."""

    tool_id: str
    code_id: str
    """Content hash of the tool's code."""
    deps_id: str
    """Hash of the dependency environment (lock file, image)."""
    stable_version: str
    """The stable toolbox version the tool was admitted (and is trialled) against."""
    weights_id: str | None = None
    """Content hash of trained weights, for specialist-model tools."""


@dataclass(frozen=True)
class TrialBatch:
    """One later batch, run by the stable system with and without the tool."""

    batch_id: str
    metric_with: float
    metric_without: float
    cost_with: float
    cost_without: float

    def __post_init__(self) -> None:
        for name in ("metric_with", "metric_without", "cost_with", "cost_without"):
            require_finite(getattr(self, name), f"trial batch {self.batch_id!r} {name}")


def admit_to_trial(
    with_tool: Mapping[str, float], without_tool: Mapping[str, float], tool: FrozenTool, *,
    scorer_versions: Collection[str], anchored: str, min_gain: float = 0.0, seed: int = 0,
) -> GateOutcome:
    """Fast discovery: `trial` (admit to the experimental pool) iff the paired mean gain on
    the discovery cases exceeds `min_gain`, else `reject`. No evidence is a reject."""
    check_anchor(set(scorer_versions), anchored)
    for side, values in (("with", with_tool), ("without", without_tool)):
        for case_id, value in values.items():
            require_finite(value, f"discovery score {side} tool {tool.tool_id!r} on {case_id!r}")
    evidence: dict[str, Any] = {
        "gate": DISCOVERY_GATE, "tool": asdict(tool), "min_gain": min_gain,
        "with_tool": dict(sorted(with_tool.items())), "without_tool": dict(sorted(without_tool.items())),
    }
    if not with_tool and not without_tool:
        return no_evidence("reject", f"reject: no discovery evidence for tool {tool.tool_id!r}", evidence)
    cases, diffs = paired_differences(with_tool, without_tool)
    gain = fmean(diffs)
    admit = gain > min_gain + CASE_TOL
    reason = (
        f"{'trial' if admit else 'reject'}: discovery gain {gain:+.6g} {'>' if admit else '<='} min_gain {min_gain:g} "
        f"over {len(cases)} paired case(s); "
        + ("admitted to the experimental pool, frozen" if admit else "not admitted")
    )
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    return GateOutcome(
        decision="trial" if admit else "reject", reason=reason,
        improved_cases=[c for c, d in zip(cases, diffs) if d > CASE_TOL],
        regressed_cases=[c for c, d in zip(cases, diffs) if d < -CASE_TOL],
        select_score=fmean(with_tool[c] for c in cases), baseline_score=fmean(without_tool[c] for c in cases),
        delta=gain, ci_low=low, ci_high=high, n_cases=len(cases), evidence_json=dump_evidence(evidence),
    )


def registration_gate(
    tool: FrozenTool, batches: Sequence[TrialBatch], *, current_stable_version: str,
    scorer_versions: Collection[str], anchored: str, n_batches: int = 3, threshold: float = 0.0, seed: int = 0,
) -> GateOutcome:
    """Slow registration: `accept` iff mean gain over the first `n_batches` trial batches
    > `threshold` and mean cost with the tool ≤ without; `reject` otherwise; `trial` while
    batches are missing or when the stable set changed since admission."""
    check_anchor(set(scorer_versions), anchored)
    if n_batches < 1:
        raise ValueError(f"n_batches {n_batches}: a trial needs at least one batch")
    ids = [b.batch_id for b in batches]
    if len(set(ids)) != len(ids):
        raise ValueError(f"trial of {tool.tool_id!r} lists a batch more than once: {ids}")
    used = list(batches[:n_batches])
    evidence: dict[str, Any] = {
        "gate": TRIAL_GATE, "tool": asdict(tool), "current_stable_version": current_stable_version,
        "n_batches": n_batches, "threshold": threshold, "batches": [asdict(b) for b in used],
        "ignored_batches": ids[n_batches:],
    }
    if tool.stable_version != current_stable_version:
        evidence["retest"] = True
        changed = f"{tool.stable_version} -> {current_stable_version}"
        reason = f"trial: the stable set changed during the trial ({changed}); re-test against the current stable set"
        return no_evidence("trial", reason, evidence)
    if len(used) < n_batches:
        return no_evidence("trial", f"trial: {len(used)} of {n_batches} trial batches so far", evidence)
    gains = [b.metric_with - b.metric_without for b in used]
    gain = fmean(gains)
    cost_with, cost_without = fmean(b.cost_with for b in used), fmean(b.cost_without for b in used)
    gain_ok = gain > threshold + CASE_TOL
    cost_ok = cost_with <= cost_without + CASE_TOL
    evidence |= {"mean_gain": gain, "mean_cost_with": cost_with, "mean_cost_without": cost_without,
                 "gain_ok": gain_ok, "cost_ok": cost_ok}
    reason = (
        f"{'accept' if gain_ok and cost_ok else 'reject'}: mean gain {gain:+.6g} over {n_batches} batch(es) "
        f"{'>' if gain_ok else '<='} threshold {threshold:g}; mean cost {cost_with:.6g} with vs {cost_without:.6g} "
        f"without ({'not increased' if cost_ok else 'increased'}); "
        f"{sum(g > CASE_TOL for g in gains)} of {n_batches} batch(es) improved"
    )
    low, high = paired_bootstrap_ci(gains, seed=seed)
    return GateOutcome(
        decision="accept" if gain_ok and cost_ok else "reject", reason=reason,
        improved_cases=[b.batch_id for b, g in zip(used, gains) if g > CASE_TOL],
        regressed_cases=[b.batch_id for b, g in zip(used, gains) if g < -CASE_TOL],
        select_score=fmean(b.metric_with for b in used), baseline_score=fmean(b.metric_without for b in used),
        delta=gain, ci_low=low, ci_high=high, n_cases=n_batches, evidence_json=dump_evidence(evidence),
    )
