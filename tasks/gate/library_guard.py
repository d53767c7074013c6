"""The library guard: periodic re-test of the whole active set of rules or skills.

Self-Healing Harness (paper): a rule-base guard periodically re-tests the whole active
set; the interval is not specified. The paper's reason for it: in one AppWorld
configuration the active rules grew from 13 to 70 while the edge over the baseline went
from +0.017 to −0.016, and every one of those rules had passed its own replay gate.

Rule implemented here: from ablation evidence (the full set's score and the score of the
set without each member, on the same cases), a member whose removal does not hurt
(mean removal delta ≥ −tolerance) may be retired. Retire one at a time, greedily, the
most harmful first (the largest removal delta; ties by member id). Removing one member
changes every other member's ablation, so re-evaluating is the caller's job: the gate
returns one member to retire, or none.

Decisions: `reject` retires the named member (its candidate id goes on the row); `accept`
keeps the whole active set. Choices where the paper is silent: tolerance 0.0 (a member
that changes nothing is retired: a smaller set with the same score is preferred), the
1e-12 float slack at the boundary, and a guard every 10 admissions (`guard_due`)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean
from typing import Any, Collection, Mapping

from tasks.gate.best_so_far import CASE_TOL, GateOutcome, check_anchor
from tasks.gate.evidence import dump_evidence, no_evidence, require_finite
from tasks.gate.stats import paired_bootstrap_ci, paired_differences

GATE = "library_guard"


@dataclass(frozen=True)
class GuardResult:
    """The recorded decision and the member to retire (None: keep the set)."""

    outcome: GateOutcome
    retire: str | None


def guard_due(admissions_since_check: int, interval: int = 10) -> bool:
    """Whether the active set is due a re-test: every `interval` admissions."""
    if interval < 1:
        raise ValueError(f"guard interval {interval}: re-test after at least one admission")
    if admissions_since_check < 0:
        raise ValueError(f"admissions_since_check {admissions_since_check} is negative")
    return admissions_since_check >= interval


def _check_finite(full: Mapping[str, float], without: Mapping[str, Mapping[str, float]]) -> None:
    for case_id, value in full.items():
        require_finite(value, f"full-set score on {case_id!r}")
    for member, scores in without.items():
        for case_id, value in scores.items():
            require_finite(value, f"score without {member!r} on {case_id!r}")


def guard_retire(
    full: Mapping[str, float], without: Mapping[str, Mapping[str, float]], *,
    scorer_versions: Collection[str], anchored: str, tolerance: float = 0.0, seed: int = 0,
) -> GuardResult:
    """The single member to retire now: the one whose removal helps most, provided its
    removal delta (mean of without − full) is ≥ −tolerance; otherwise none.

    On a retirement, `improved_cases` / `regressed_cases` are the cases the set scores
    higher / lower on without that member, and `delta` is its removal delta."""
    check_anchor(set(scorer_versions), anchored)
    if tolerance < 0:
        raise ValueError(f"guard tolerance {tolerance}: a tolerance is a non-negative drop")
    _check_finite(full, without)
    evidence: dict[str, Any] = {"gate": GATE, "tolerance": tolerance, "full": dict(sorted(full.items()))}
    if not without or not full:
        what = "no active member" if not without else "no ablation case"
        return GuardResult(no_evidence("accept", f"accept: {what} to re-test; nothing retired", evidence), None)
    ablations = {member: paired_differences(without[member], full) for member in sorted(without)}
    removal = {member: fmean(diffs) for member, (_, diffs) in ablations.items()}
    retirable = sorted((m for m in removal if removal[m] >= -(tolerance + CASE_TOL)), key=lambda m: (-removal[m], m))
    evidence |= {
        "members": {m: {"removal_delta": removal[m], "without": dict(sorted(without[m].items()))} for m in removal},
        "retirable": retirable,
    }
    if not retirable:
        least = max(removal, key=lambda m: (removal[m], m))
        reason = (f"accept: removing any of {len(removal)} member(s) hurts by more than tolerance {tolerance:g} "
                  f"(least harmful removal: {least} {removal[least]:+.6g}); nothing retired")
        return GuardResult(_kept(reason, full, evidence), None)
    member = retirable[0]
    cases, diffs = ablations[member]
    evidence["retired"] = member
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    reason = (f"reject: retire {member}: removing it changes the mean by {removal[member]:+.6g} >= -{tolerance:g} "
              f"over {len(cases)} case(s)" + (f"; {len(retirable) - 1} more retirable, re-test after this one"
                                                if len(retirable) > 1 else ""))
    outcome = GateOutcome(
        decision="reject", reason=reason, improved_cases=[c for c, d in zip(cases, diffs) if d > CASE_TOL],
        regressed_cases=[c for c, d in zip(cases, diffs) if d < -CASE_TOL],
        select_score=fmean(without[member].values()), baseline_score=fmean(full.values()), delta=removal[member],
        ci_low=low, ci_high=high, n_cases=len(cases), evidence_json=dump_evidence(evidence),
    )
    return GuardResult(outcome, member)


def _kept(reason: str, full: Mapping[str, float], evidence: dict[str, Any]) -> GateOutcome:
    """The outcome of keeping the whole set: the full set's score, no delta."""
    score = fmean(full.values())
    return GateOutcome(decision="accept", reason=reason, improved_cases=[], regressed_cases=[], select_score=score,
                       baseline_score=score, delta=None, ci_low=None, ci_high=None, n_cases=len(full),
                       evidence_json=dump_evidence(evidence))
