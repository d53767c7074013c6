"""FORGE's prompt step (pure): the training batch, the reflector's proposal, the prompt
gate's rule and the stagnation counter.

Prompt gate (the paper's two steps): a candidate prompt must first improve the mean
score on the training batch it was reflected from (same instances, same noise); only
then is it run on the fixed validation set, and it is accepted when it beats the
current prompt's validation score there (strictly: equal is no improvement). Best
validation only rises; ``steps_since_improve`` counts the steps it did not, and the data
gate opens when it reaches ``patience`` (then it restarts from 0)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from tasks.proposers.rule_evidence import Evidence, Trace
from tasks.proposers.rules import NoRuleEvidence, RuleProposer

Reflector = Callable[[Sequence[Trace], Mapping[str, Any], random.Random], "dict[str, Any] | None"]
"""(the batch's trajectories, the prompt's harness, rng) -> the revised harness, or None."""


def rule_reflector(traces: Sequence[Trace], harness: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """The honest default reflector: the rule proposer's edit from the imperfect
    trajectories (the perfect ones are its counter-evidence)."""
    try:
        return RuleProposer().propose(Evidence.of(list(traces)), dict(harness), rng).document
    except NoRuleEvidence:
        return None


def batch_of(train_ids: Sequence[str], size: int, rng: random.Random) -> list[str]:
    """``size`` distinct training instances (all when there are fewer), sorted."""
    pool = sorted(train_ids)
    return sorted(rng.sample(pool, min(size, len(pool))))


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True)
class PromptVerdict:
    accepted: bool
    reason: str
    evaluated: bool
    """Whether the candidate passed the batch step and ran on the validation set."""


def prompt_gate(batch_new: float, batch_old: float, val_new: float | None, val_old: float) -> PromptVerdict:
    if batch_new <= batch_old:
        return PromptVerdict(False, f"reject: training batch {batch_old:.3f} -> {batch_new:.3f}, no improvement; "
                                    "not run on the validation set", False)
    if val_new is None:
        raise ValueError("a candidate that improves its batch must have a validation score")
    accepted = val_new > val_old
    return PromptVerdict(accepted, f"{'accept' if accepted else 'reject'}: training batch {batch_old:.3f} -> "
                                   f"{batch_new:.3f}, validation {val_old:.3f} -> {val_new:.3f}", True)


@dataclass(frozen=True)
class Stagnation:
    best_val: float
    steps_since_improve: int
    synthesize: bool


def stagnation(best_val: float, since: int, val: float, patience: int) -> Stagnation:
    """The counter after a step whose prompt in force scores ``val`` on validation."""
    if val > best_val:
        return Stagnation(val, 0, False)
    since += 1
    return Stagnation(best_val, since, since >= patience)
