"""The one place a gate's outcome becomes a `GateDecisionRow`, and the one paired
per-case outcome (improved / regressed cases, means, delta, bootstrap CI, evidence)
the loop gates that weigh a candidate against the version in force share.

`decision_row` puts the run id, the derived decision id, the anchored scorer version and
the outcome's fields together; `paired_scores` + `paired_outcome` turn two per-case
score maps into a `GateOutcome` whose numbers and evidence are strict JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from schemas.ids import derived_id
from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.runtime.context import RunRef, anchored_scorer_version


def decision_row(ref: RunRef, round_index: int, candidate_id: str, gate: str, baseline_id: str | None,
                 outcome: GateOutcome, id_parts: Sequence[object] | None = None,
                 scorer_version: str | None = None) -> GateDecisionRow:
    """`outcome` as the decision row of ``candidate_id`` at ``gate`` in round ``round_index``.

    The decision id is ``derived_id(run_id, *id_parts)``; ``id_parts`` defaults to
    ``(candidate_id, gate, round_index)``. ``scorer_version`` defaults to the run's anchored one."""
    parts = (candidate_id, gate, round_index) if id_parts is None else tuple(id_parts)
    return GateDecisionRow(run_id=ref.run_id, decision_id=derived_id(ref.run_id, *parts), round=round_index,
                           candidate_id=candidate_id, gate=gate, baseline_id=baseline_id,
                           scorer_version=anchored_scorer_version(ref) if scorer_version is None else scorer_version,
                           **vars(outcome))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class PairedScores:
    """Candidate vs baseline on the same cases (sorted): per-case values and differences,
    the two means (each summed in its score map's order), the mean difference and its
    paired bootstrap CI (nan, nan with no case)."""

    cases: list[str]
    candidate: list[float]
    baseline: list[float]
    diffs: list[float]
    candidate_mean: float
    baseline_mean: float
    delta: float
    ci_low: float
    ci_high: float


def paired_scores(candidate: Mapping[str, float], baseline: Mapping[str, float], resamples: int,
                  seed: int) -> PairedScores:
    """The paired statistics of two per-case score maps over exactly the same cases."""
    cases, diffs = paired_differences(candidate, baseline)
    low, high = paired_bootstrap_ci(diffs, resamples=resamples, seed=seed)
    return PairedScores(cases=cases, candidate=[candidate[c] for c in cases], baseline=[baseline[c] for c in cases],
                        diffs=diffs, candidate_mean=_mean(list(candidate.values())),
                        baseline_mean=_mean(list(baseline.values())), delta=_mean(diffs), ci_low=low, ci_high=high)


def paired_outcome(scores: PairedScores, decision: str, reason: str, evidence: Mapping[str, Any]) -> GateOutcome:
    """The outcome of a paired comparison: a case improved (regressed) if its difference is
    above (below) zero; numbers and evidence (``evidence`` plus the cases and both sides'
    per-case values) with nan / infinities as None."""
    pairs = list(zip(scores.cases, scores.diffs))
    payload = {**evidence, "cases": scores.cases, "candidate": scores.candidate, "baseline": scores.baseline}
    return GateOutcome(
        decision=decision, reason=reason, improved_cases=[c for c, d in pairs if d > 0],
        regressed_cases=[c for c, d in pairs if d < 0], select_score=json_safe(scores.candidate_mean),
        baseline_score=json_safe(scores.baseline_mean), delta=json_safe(scores.delta),
        ci_low=json_safe(scores.ci_low), ci_high=json_safe(scores.ci_high), n_cases=len(scores.cases),
        evidence_json=dump_evidence(json_safe(payload)))
