"""Shared pieces of the gates' evidence: strict JSON, finite inputs, the no-evidence outcome.

`evidence_json` is read by DuckDB's json functions, so it must be valid JSON: NaN and
infinities are refused at the gate's door, where the error can still name the case."""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

from tasks.gate.best_so_far import GateOutcome


def dump_evidence(payload: Mapping[str, Any]) -> str:
    """Canonical evidence JSON: sorted keys, no NaN (DuckDB rejects it)."""
    return json.dumps(payload, sort_keys=True, allow_nan=False, default=str)


def json_safe(value: Any) -> Any:
    """``value`` with every nan or infinite float (recursively, numpy scalars included)
    as None, for evidence JSON, which has neither."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()  # a numpy scalar
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def require_finite(value: float, where: str) -> float:
    """`value` as a float, or a ValueError naming `where` if it is not a finite number."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{where} is {value!r}; a gate weighs finite numbers only")
    return number


def no_evidence(decision: str, reason: str, evidence: Mapping[str, Any]) -> GateOutcome:
    """An outcome decided without any case to weigh (no scores, no deltas)."""
    return GateOutcome(decision=decision, reason=reason, improved_cases=[], regressed_cases=[], select_score=None,
                       baseline_score=None, delta=None, ci_low=None, ci_high=None, n_cases=0,
                       evidence_json=dump_evidence(evidence))
