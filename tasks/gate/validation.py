"""Growing Harness: held-out validation with rollback of the whole loop state.

Paper's rule: measure validation success after every 1 (BrowseComp-Plus) or every 8
(WebArena-Verified) fixed tasks, plus once before the final test; if it is below the last
accepted version, roll back the code AND the window AND the cursor AND related state.

The loop state is one frozen value (`LoopState`), and the gate returns the state to
continue from: on rollback, the last accepted state whole. A caller restores all of it or
nothing, never the code without the window.

Choices where the paper is silent:
- "below" is strict (beyond a 1e-12 float slack): a tie with the last accepted version is
  accepted and becomes the new last accepted version.
- scores are per validation task, paired with the last accepted version's scores on the
  same tasks; the validation score is their mean (a caller with one number passes
  {"validation": score}).
- no validation score for the current version is a rollback: it cannot show it is not below.
- the first last-accepted version is the starting scaffold, validated by the caller
  before the first edit (`Checkpoint` needs scores)."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import fmean
from types import MappingProxyType
from typing import Any, Collection, Mapping

from tasks.gate.best_so_far import CASE_TOL, GateOutcome, check_anchor
from tasks.gate.evidence import dump_evidence, no_evidence, require_finite
from tasks.gate.stats import paired_bootstrap_ci, paired_differences

GATE = "growing_harness_validation"


@dataclass(frozen=True)
class LoopState:
    """Everything a rollback restores. Lists become tuples and `extra` a read-only copy,
    so a held state cannot change under the caller (values inside `extra` are not copied)."""

    artifact_id: str
    """The harness / rule set / skill library version (a candidate id)."""
    window: tuple[str, ...]
    """Task ids in the rolling failure window."""
    cursor: int
    """Position in the training task stream."""
    memories: tuple[str, ...] = ()
    """Ids of memories or other distillates the loop has accumulated."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Any other related state (retry counts per task, optimizer notes)."""

    def __post_init__(self) -> None:
        if isinstance(self.window, str) or isinstance(self.memories, str):
            raise TypeError(f"LoopState {self.artifact_id!r}: window and memories are sequences of ids, not one string")
        if self.cursor < 0:
            raise ValueError(f"LoopState {self.artifact_id!r}: cursor {self.cursor} is negative")
        object.__setattr__(self, "window", tuple(self.window))
        object.__setattr__(self, "memories", tuple(self.memories))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def summary(self) -> dict[str, Any]:
        """The state as plain JSON-ready values (for the evidence)."""
        return {"artifact_id": self.artifact_id, "window": list(self.window), "cursor": self.cursor,
                "memories": list(self.memories), "extra": dict(self.extra)}


@dataclass(frozen=True)
class Checkpoint:
    """The last accepted state with the validation scores it was accepted on."""

    state: LoopState
    scores: Mapping[str, float]

    def __post_init__(self) -> None:
        if not self.scores:
            raise ValueError(f"checkpoint of {self.state.artifact_id!r} has no validation scores; validate it first")
        for task_id, value in self.scores.items():
            require_finite(value, f"checkpoint {self.state.artifact_id!r} validation score of {task_id!r}")
        object.__setattr__(self, "scores", MappingProxyType(dict(self.scores)))

    @property
    def score(self) -> float:
        return fmean(self.scores.values())


@dataclass(frozen=True)
class ValidationResult:
    """The recorded decision, the state to continue from and the new last accepted version."""

    outcome: GateOutcome
    resume: LoopState
    accepted: Checkpoint


def validation_due(fixes_since_check: int, *, interval: int = 1, final: bool = False) -> bool:
    """Whether to validate now: after every `interval` fixed tasks (paper: 1 or 8) and
    always once before the final test. Counting fixes since the last check, not a modulo
    of the total, so a joint patch that fixes several tasks at once cannot skip a check."""
    if interval < 1:
        raise ValueError(f"validation interval {interval}: validate after at least one fix")
    if fixes_since_check < 0:
        raise ValueError(f"fixes_since_check {fixes_since_check} is negative")
    return final or fixes_since_check >= interval


def validate_or_rollback(
    current: LoopState, scores: Mapping[str, float], accepted: Checkpoint, *,
    scorer_versions: Collection[str], anchored: str, seed: int = 0, tolerance: float = 0.0,
) -> ValidationResult:
    """Accept the current state unless its validation score is below the last accepted
    version's (by more than `tolerance`, paper: 0); on rollback, resume from the last
    accepted state in full."""
    check_anchor(set(scorer_versions), anchored)
    if not 0.0 <= tolerance <= 1.0:
        raise ValueError(f"validation tolerance {tolerance} must be in [0, 1]")
    for task_id, value in scores.items():
        require_finite(value, f"validation score of {task_id!r} for {current.artifact_id!r}")
    evidence: dict[str, Any] = {
        "gate": GATE, "rule": "rollback iff the validation score is below the last accepted version's",
        "current": current.summary(), "last_accepted": accepted.state.summary(),
        "scores": {"current": dict(sorted(scores.items())), "last_accepted": dict(sorted(accepted.scores.items()))},
        "last_accepted_score": accepted.score, "tolerance": tolerance,
    }
    if not scores:
        evidence |= {"rolled_back": True, "restored": accepted.state.summary()}
        reason = (f"rollback: no validation score for {current.artifact_id!r}; "
                  f"restoring {accepted.state.artifact_id!r} with its window, cursor and memories")
        return ValidationResult(no_evidence("rollback", reason, evidence), accepted.state, accepted)
    tasks, diffs = paired_differences(scores, accepted.scores)
    score = fmean(scores.values())
    below = score < accepted.score - tolerance - CASE_TOL
    resume = accepted.state if below else current
    evidence |= {"current_score": score, "rolled_back": below, "restored": resume.summary()}
    reason = (
        f"validation {score:.6g} {'is below' if below else 'is not below'} the last accepted {accepted.score:.6g} "
        f"over {len(tasks)} task(s): "
        + (f"rollback to {accepted.state.artifact_id!r} with its window, cursor and memories" if below
           else f"accept {current.artifact_id!r} as the last accepted version")
    )
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    outcome = GateOutcome(
        decision="rollback" if below else "accept", reason=reason,
        improved_cases=[t for t, d in zip(tasks, diffs) if d > CASE_TOL],
        regressed_cases=[t for t, d in zip(tasks, diffs) if d < -CASE_TOL], select_score=score,
        baseline_score=accepted.score, delta=score - accepted.score, ci_low=low, ci_high=high, n_cases=len(tasks),
        evidence_json=dump_evidence(evidence),
    )
    return ValidationResult(outcome, resume, accepted if below else Checkpoint(current, scores))
