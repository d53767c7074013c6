"""gate: each selector's prediction against the trained students, per pool and over all
pools: the predicted-best group's holdout accuracy minus the mean of the equal-size random
subsets (paired per holdout case, bootstrap 95% CI), whether it was the true best group,
and Spearman of predicted vs actual ranking (CI by resampling holdout cases). Decisions
say whether the CI of the top-group gain excludes 0 (``accept``) or not (``reject``)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from prefect import task

from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rows import decision_row
from tasks.gate.stats import paired_bootstrap_ci
from tasks.gate.stats import spearman
from tasks.loops.datasense.pool import Submission
from tasks.loops.datasense.stages import protocol_of
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.stages import eval_key


def correct_by_case(ref: RunRef, candidate_id: str) -> dict[str, float]:
    rows = store_for(ref.store_uri).read_part("scores", ref.run_id, "eval", eval_key("holdout", candidate_id))
    return {r.case_id: r.value for r in rows}


def judge(submission: Submission, groups: Sequence[np.ndarray], references: Sequence[np.ndarray],
          resamples: int, seed: int) -> dict[str, object]:
    """The three measures for one submission; ``groups[g]`` and ``references[k]`` are
    per-case 0/1 correctness vectors over the same holdout cases."""
    actual = [float(g.mean()) for g in groups]
    best = submission.predicted_rank.index(1)
    reference = np.mean(references, axis=0)
    diffs = groups[best] - reference
    predicted = [-r for r in submission.predicted_rank]  # higher = predicted better
    rng = np.random.default_rng(seed)
    stacked = np.stack(groups)
    draws = [spearman(predicted, stacked[:, idx].mean(axis=1))
             for idx in rng.integers(0, stacked.shape[1], size=(resamples, stacked.shape[1]))]
    finite = [d for d in draws if math.isfinite(d)]
    rho_ci = (float(np.quantile(finite, 0.025)), float(np.quantile(finite, 0.975))) if finite else (math.nan, math.nan)
    return {
        "actual_accuracy": actual, "predicted_rank": list(submission.predicted_rank), "predicted_best": best,
        "true_best": [g for g, a in enumerate(actual) if a == max(actual)], "top1_hit": actual[best] == max(actual),
        "reference_accuracy": float(reference.mean()), "reference_each": [float(r.mean()) for r in references],
        "delta": float(diffs.mean()), "delta_ci": paired_bootstrap_ci(diffs, resamples=resamples, seed=seed),
        "spearman": spearman(predicted, actual), "spearman_ci": rho_ci, "case_diffs": diffs.tolist(),
    }


@task(name="gate", **STAGE_OPTIONS)
def verify(ref: RunRef, index: int, submissions: dict[str, Submission], students: dict[str, str]) -> None:
    """One decision per selector for pool ``index``."""
    once(ref, "gate_decisions", "gate", f"pool-{index:02d}", lambda: _pool_rows(ref, index, submissions, students))


def _vectors(ref: RunRef, ids: Sequence[str]) -> list[np.ndarray]:
    by_case = [correct_by_case(ref, cid) for cid in ids]
    cases = sorted(by_case[0])
    return [np.array([c[case] for case in cases]) for c in by_case]


def _pool_rows(ref: RunRef, index: int, submissions: dict[str, Submission],
               students: dict[str, str]) -> list[GateDecisionRow]:
    config = protocol_of(ref)
    references = _vectors(ref, [cid for name, cid in sorted(students.items()) if name.startswith("reference:")])
    rows = []
    for name, submission in sorted(submissions.items()):
        ids = [students[f"{name}:g{g}"] for g in range(len(submission.groups))]
        found = judge(submission, _vectors(ref, ids), references, config.datasense.resamples, config.seed + index)
        rows.append(_row(ref, f"datasense:{name}:pool{index:02d}", index, ids[found["predicted_best"]], found))
    return rows


@task(name="register", **STAGE_OPTIONS)
def aggregate(ref: RunRef, pools: int) -> list[GateDecisionRow]:
    """Per selector over every pool: the top-group gain (per-case differences pooled),
    top-1 hits out of pools, mean Spearman."""
    return once(ref, "gate_decisions", "gate", "aggregate", lambda: _aggregate_rows(ref, pools))


def _aggregate_rows(ref: RunRef, pools: int) -> list[GateDecisionRow]:
    import json

    config = protocol_of(ref)
    store, per = store_for(ref.store_uri), {}
    for index in range(pools):
        for row in store.read_part("gate_decisions", ref.run_id, "gate", f"pool-{index:02d}"):
            per.setdefault(row.gate.split(":")[1], []).append((row, json.loads(row.evidence_json)))
    out = []
    for name, found in sorted(per.items()):
        diffs = [d for _, e in found for d in e["case_diffs"]]
        rhos = [e["spearman"] for _, e in found if e["spearman"] is not None]
        summary = {"pools": len(found), "top1_hits": sum(e["top1_hit"] for _, e in found),
                   "delta": float(np.mean(diffs)), "delta_ci": paired_bootstrap_ci(diffs, resamples=config.datasense.resamples,
                                                                               seed=config.seed),
                   "spearman_mean": float(np.mean(rhos)) if rhos else None,
                   "spearman_each": [e["spearman"] for _, e in found], "case_diffs": []}
        out.append(_row(ref, f"datasense:{name}", pools, found[0][0].candidate_id, summary))
    return out


def _row(ref: RunRef, gate: str, round_index: int, candidate_id: str, found: dict) -> GateDecisionRow:
    low, high = found["delta_ci"]
    shown = not (low <= 0.0 <= high)
    name = gate.split(":")[1]
    hits = (f"top-1 {'hit' if found['top1_hit'] else 'miss'}" if "top1_hit" in found
            else f"top-1 hits {found['top1_hits']}/{found['pools']}")
    rho = found.get("spearman", found.get("spearman_mean"))
    reason = (f"{name}: predicted-best group − random subsets {found['delta']:+.4f} holdout accuracy, 95% CI "
              f"[{low:+.4f}, {high:+.4f}]; {hits}; Spearman {_fmt(rho)}")
    evidence = {k: v for k, v in found.items() if k != "case_diffs" or gate.count(":") == 2}
    outcome = GateOutcome(
        decision="accept" if shown else "reject", reason=reason, improved_cases=[], regressed_cases=[],
        select_score=None, baseline_score=None, delta=found["delta"], ci_low=json_safe(low), ci_high=json_safe(high),
        n_cases=len(found.get("case_diffs") or []) or found.get("pools", 0),
        evidence_json=dump_evidence(json_safe(evidence)))
    return decision_row(ref, round_index, candidate_id, gate, None, outcome, id_parts=(gate,))


def _fmt(value) -> str:
    return "undefined (a constant ranking)" if value is None or not math.isfinite(value) else f"{value:+.3f}"


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None

