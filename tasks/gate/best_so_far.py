"""The best-so-far gate: admit a candidate only if its mean on the select cases beats
the current champion's on the same cases (paired), by more than `min_delta`.

Pure: evidence in, a decision with its reasons out. Evidence scored by any scorer other
than the run's anchored version is refused, so a candidate cannot change its ruler."""

from __future__ import annotations

import json
from dataclasses import dataclass
from statistics import fmean

from tasks.gate.stats import paired_bootstrap_ci, sign_test_p

CASE_TOL = 1e-12


class EvidenceRefused(ValueError):
    """Evidence was scored by a scorer other than the run's anchored one."""


@dataclass(frozen=True)
class GateOutcome:
    decision: str
    reason: str
    improved_cases: list[str]
    regressed_cases: list[str]
    select_score: float | None
    baseline_score: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    n_cases: int
    evidence_json: str


def check_anchor(scorer_versions: set[str], anchored: str) -> None:
    foreign = sorted(scorer_versions - {anchored})
    if foreign:
        raise EvidenceRefused(
            f"evidence scored by scorer version(s) {foreign}, but the run is anchored to {anchored!r}; "
            "a gate only weighs evidence from the run's own scorer"
        )


def best_so_far_gate(
    candidate: dict[str, float],
    champion: dict[str, float] | None,
    scorer_versions: set[str],
    anchored: str,
    min_delta: float,
    seed: int = 0,
) -> GateOutcome:
    """Decide on one candidate from its per-case select scores and the champion's."""
    check_anchor(scorer_versions, anchored)
    if not candidate:
        return GateOutcome("reject", "no select-case evidence for the candidate", [], [], None, None,
                           None, None, None, 0, "{}")
    mean = fmean(candidate.values())
    if champion is None:
        evidence = json.dumps({"candidate": candidate}, sort_keys=True)
        return GateOutcome("accept", "no champion yet: the first candidate becomes the baseline", [], [],
                           mean, None, None, None, None, len(candidate), evidence)
    common = sorted(set(candidate) & set(champion))
    if not common:
        raise ValueError("candidate and champion share no select case: the evidence is not paired")
    diffs = [candidate[c] - champion[c] for c in common]
    delta = fmean(diffs)
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    improved = [c for c, d in zip(common, diffs) if d > CASE_TOL]
    regressed = [c for c, d in zip(common, diffs) if d < -CASE_TOL]
    base = fmean(champion[c] for c in common)
    accept = delta > min_delta
    reason = (
        f"select mean {fmean(candidate[c] for c in common):.6g} vs champion {base:.6g}: "
        f"delta {delta:+.3g} {'>' if accept else '<='} min_delta {min_delta:g} "
        f"over {len(common)} paired cases ({len(improved)} improved, {len(regressed)} regressed)"
    )
    evidence = json.dumps(
        {"cases": common, "candidate": [candidate[c] for c in common], "champion": [champion[c] for c in common],
         "sign_test_p": sign_test_p(diffs, CASE_TOL)},
        sort_keys=True,
    )
    return GateOutcome("accept" if accept else "reject", reason, improved, regressed, mean, base, delta,
                       low, high, len(common), evidence)
