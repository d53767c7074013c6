"""One MOSCOPT round as a pure function of the state, the memory and a simulator, and the
toolsim simulator itself (trusted: the episode is re-simulated in this process from the
harness data the state composes; no candidate code runs here). The flow's stages and
the findings script both call ``run_round``, so there is one implementation of a round.

A round: the current state runs the train cases (the skills' statistics and the failing
episodes the proposers read), one edit of the round's stage is proposed (or one edit of
every stage, ``all_at_once``), the current and edited states run the select cases, and
the gate accepts the edit iff validation success improves.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from suites.base import Case
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import parse_harness
from suites.toolsim.templates import TEMPLATES
from tasks.gate.best_so_far import GateOutcome
from tasks.loops.moscopt.edits import Edit, Failure, Memory, all_at_once, propose, schedule
from tasks.loops.moscopt.gate import decide
from tasks.loops.moscopt.pool import State, update_stats


@dataclass(frozen=True)
class Outcome:
    """One episode: the case, its template, the skills G loaded, the true success."""

    case_id: str
    template: str
    loaded: tuple[str, ...]
    success: float


Simulate = Callable[[State, str], list[Outcome]]
"""(state, split) -> an outcome per case of the split, in case order."""


@dataclass(frozen=True)
class Knobs:
    """What a round needs of the run's config (``schemas.moscopt.MoscoptConfig``)."""

    k: int
    period: int
    max_pool: int
    min_delta: float = 0.0
    freeze_gating: bool = False
    all_at_once: bool = False


@dataclass
class Round:
    """A round's record: the edit (None: no edit found), its gate outcome, the train and
    select episodes, and the state, memory and statistics after the round."""

    index: int
    stage: int
    edit: Edit | None
    outcome: GateOutcome | None
    train: list[Outcome]
    before: list[Outcome]
    after: list[Outcome]
    state: State
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)


@lru_cache(maxsize=65536)
def _success(payload_json: str, document_json: str) -> float:
    return float(run_episode(json.loads(payload_json), parse_harness(json.loads(document_json))).evaluation.success)


def toolsim_simulator(cases: Sequence[Case], k: int) -> Simulate:
    """The trusted simulation: each case runs under the harness its template's K loaded
    skills compose (``State.document``); episodes cached by (payload, harness)."""
    by_split: dict[str, list[Case]] = {}
    for case in cases:
        by_split.setdefault(case.split, []).append(case)

    def simulate(state: State, split: str) -> list[Outcome]:
        documents = {t: json.dumps(state.document(t, k), sort_keys=True) for t in TEMPLATES}
        return [Outcome(c.case_id, c.payload["template"], tuple(state.loaded(c.payload["template"], k)),
                        _success(json.dumps(c.payload, sort_keys=True), documents[c.payload["template"]]))
                for c in sorted(by_split.get(split, []), key=lambda c: c.case_id)]

    return simulate


def by_case(outcomes: Sequence[Outcome]) -> dict[str, float]:
    return {o.case_id: o.success for o in outcomes}


def mean_success(outcomes: Sequence[Outcome]) -> float:
    return sum(o.success for o in outcomes) / len(outcomes) if outcomes else 0.0


def run_round(index: int, state: State, memory: Memory, stats: Mapping[str, tuple[int, int]],
              catalogue: Mapping[str, Any], knobs: Knobs, simulate: Simulate, seed: int,
              proposer: Callable[..., Edit | None] = propose) -> Round:
    """Round ``index`` (1-based) from ``state``; ``memory`` is updated in place (EditAdam).
    ``proposer``: ``edits.propose`` (the default) or ``llm.LLMProposer`` (same signature)."""
    rng = random.Random(seed)
    stage = 0 if knobs.all_at_once else schedule(index, knobs.period, knobs.freeze_gating)
    train = simulate(state, "train")
    for o in train:
        stats = update_stats(stats, o.loaded, bool(o.success))
    failures = [Failure(o.case_id, o.template, o.loaded) for o in train if not o.success]
    args = (state, memory, failures, catalogue, stats, knobs.k, knobs.max_pool, rng)
    edit = all_at_once(*args) if knobs.all_at_once else proposer(stage, *args)
    before = simulate(state, "select")
    if edit is None:
        return Round(index, stage, None, None, train, before, before, state, dict(stats))
    after = simulate(edit.state, "select")
    described = {"stage": edit.stage, "operator": edit.operator, "target": edit.target, "diff": edit.diff}
    outcome = decide(by_case(before), by_case(after), described, knobs.min_delta, seed)
    accepted = outcome.decision == "accept"
    memory.record(edit, accepted)
    return Round(index, stage, edit, outcome, train, before, after, edit.state if accepted else state, dict(stats))
