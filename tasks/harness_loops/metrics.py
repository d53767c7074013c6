"""The metrics harness loops gate on, and per-case metric tables of a candidate. Pure."""

from __future__ import annotations

from typing import Mapping, Sequence

from schemas.rows import ScoreRow

PRIMARY = "success"


GATED_METRICS = ("success", "progress", "cost")


Metrics = Mapping[str, Mapping[str, float]]
"""case_id -> metric -> value, for one candidate."""


def case_metrics(scores: Sequence[ScoreRow], candidate_id: str, splits: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per case, every metric of one candidate on the given splits."""
    out: dict[str, dict[str, float]] = {}
    for row in scores:
        if row.candidate_id == candidate_id and row.split in splits:
            out.setdefault(row.case_id, {})[row.metric] = row.value
    return out


def success_rate(metrics: Metrics) -> float | None:
    return sum(m[PRIMARY] for m in metrics.values()) / len(metrics) if metrics else None
