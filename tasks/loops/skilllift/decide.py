"""SkillLift's gate: the champion is chosen by real results, never by the rubric. Pure.

Among the skills executed this round (the rubric's top-k and the champion, all on the
same select cases: paired), the best by mean real success is the challenger (ties go
to the champion, then to the lower id). It is accepted iff its mean beats the
champion's by more than ``min_delta``; the old champion is kept as the baseline of the
decision, whose evidence holds every executed skill's real and rubric scores, the
paired per-case differences with their bootstrap CI and sign test, and the round's rank
agreement, so the row explains itself in SQL. A paired mean over a few noisy runs is
not a no-regression guarantee (the paper's caveat); the CI is recorded, not required.
"""

from __future__ import annotations

import json
from statistics import fmean
from typing import Mapping

from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.stats import paired_bootstrap_ci, paired_differences, sign_test_p
from tasks.loops.skilllift.calibrate import Agreement

GATE = "real_champion"
SEED_GATE = "seed"


def challenger(real: Mapping[str, Mapping[str, float]], champion: str) -> str:
    """The executed skill with the best mean real score (ties: the champion, then id)."""
    return min(real, key=lambda s: (-fmean(real[s].values()), s != champion, s))


def decide(real: Mapping[str, Mapping[str, float]], rubric: Mapping[str, float], champion: str,
           corr: Agreement, min_delta: float, seed: int) -> tuple[str, GateOutcome]:
    """(the challenger, the decision on it against the champion). ``real``: skill ->
    case -> success on the select cases; ``rubric``: skill -> rubric score."""
    best = challenger(real, champion)
    cases, diffs = paired_differences(real[best], real[champion])
    delta = fmean(diffs)
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    accept = best != champion and delta > min_delta
    if best == champion:
        reason = "the champion is still the best of the executed skills"
    else:
        reason = (f"best executed skill by real success {'beats' if accept else 'does not beat'} the champion "
                  f"by more than {min_delta:g} (delta {delta:+.3f})")
    evidence = {
        "gate": GATE, "old_champion": champion, "challenger": best, "min_delta": min_delta,
        "real_mean": {s: fmean(v.values()) for s, v in sorted(real.items())},
        "rubric_score": dict(sorted(rubric.items())), "sign_p": sign_test_p(diffs),
        "kendall": corr.kendall, "kendall_ci": [corr.ci_low, corr.ci_high], "spearman": corr.spearman,
        "n_cands": corr.n_cands,
    }
    outcome = GateOutcome(
        decision="accept" if accept else "reject", reason=reason,
        improved_cases=[c for c, d in zip(cases, diffs) if d > 0], regressed_cases=[c for c, d in zip(cases, diffs) if d < 0],
        select_score=fmean(real[best].values()), baseline_score=fmean(real[champion].values()), delta=delta,
        ci_low=low, ci_high=high, n_cases=len(cases), evidence_json=dump_evidence(json_safe(evidence)),
    )
    return best, outcome


def seed_outcome(real: Mapping[str, float]) -> GateOutcome:
    """The initial skill's admission as the first champion (no champion to beat)."""
    score = fmean(real.values()) if real else None
    return GateOutcome("accept", "no champion yet: the initial skill becomes the first champion", [], [], score,
                       None, None, None, None, len(real), json.dumps({"gate": SEED_GATE, "real_mean": score}))
