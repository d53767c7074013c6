"""MOSCOPT's gate: a local revision is accepted only if the validation score improves.
Pure. Before and after are the same select cases (paired); the decision's evidence holds
the edit (stage, operator, target, diff), both means, the paired differences' bootstrap
CI and sign test, so a row explains itself in SQL. The paper's "monotonic" covers only
accepted edits on a finite validation set: the CI is recorded, not required."""

from __future__ import annotations

from statistics import fmean
from typing import Mapping

from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.stats import paired_bootstrap_ci, paired_differences, sign_test_p

GATE = "validation_improves"


def decide(before: Mapping[str, float], after: Mapping[str, float], edit: Mapping[str, object], min_delta: float,
           seed: int) -> GateOutcome:
    """Accept iff mean(after) - mean(before) > ``min_delta`` on the select cases."""
    cases, diffs = paired_differences(after, before)
    delta = fmean(diffs) if diffs else 0.0
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    accept = bool(diffs) and delta > min_delta
    reason = (f"validation success {'improves' if accept else 'does not improve'} by more than {min_delta:g} "
              f"(delta {delta:+.3f} on {len(cases)} select cases)")
    evidence = {"gate": GATE, **edit, "min_delta": min_delta, "val_before": fmean(before.values()) if before else None,
                "val_after": fmean(after.values()) if after else None, "sign_p": sign_test_p(diffs)}
    return GateOutcome(
        decision="accept" if accept else "reject", reason=reason,
        improved_cases=[c for c, d in zip(cases, diffs) if d > 0], regressed_cases=[c for c, d in zip(cases, diffs) if d < 0],
        select_score=evidence["val_after"], baseline_score=evidence["val_before"], delta=delta, ci_low=low, ci_high=high,
        n_cases=len(cases), evidence_json=dump_evidence(json_safe(evidence)),
    )
