"""Pure logic of the growing_harness loop (Growing Harness): the loop state and its
stored form, the rolling failure window (admit from the task stream, settle after a
repair), the joint repair of several window failures, and the validation check with
full-state rollback. No I/O; the stage tasks are in ``tasks/loops/growing_harness/grow.py`` and
``tasks/loops/growing_harness/grow_gate.py``.

How this departs from the paper (choices where it is silent, or where toolsim differs):
- the harness is a toolsim rule/skill document and the optimizer is the non-LLM rule
  proposer; "function-level traces" are the agent's tool-call steps (``steps`` table).
- a joint patch is up to ``repair_batch`` proposer edits applied in sequence, each from
  the window failures the earlier edits did not name as triggers.
- a patch is kept in the working harness only if it solves at least one window task; a
  patch that solves none is discarded and remembered (``memories``) so the proposer
  moves on. The paper's optimizer keeps iterating on its own patch.
- a task leaves the window unsolved after ``retry_limit`` failed attempts (paper: a
  retry limit, value not given).
- the rollback ledger (which harnesses were already tried) is not rolled back: after a
  rollback the deterministic proposer would otherwise re-propose the same patches, so a
  patch that recreates a harness already tried is trimmed (``joint_repair``'s ``is_new``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Callable, Collection, Mapping, Sequence

from tasks.gate.validation import Checkpoint, LoopState, ValidationResult, validate_or_rollback
from tasks.proposers.rule_evidence import Trace
from tasks.proposers.rules import RuleProposal

Event = tuple[str, str]
"""(task id, action): enter, pass, solved, retry, exit."""

Propose = Callable[[Sequence[Trace], Mapping[str, Any], Sequence[RuleProposal]], "RuleProposal | None"]
"""(window failures not yet covered, document to edit, edits excluded) -> one edit or None."""


@dataclass(frozen=True)
class GrowState:
    """The loop's whole state: the working version (harness, window, cursor, memories of
    discarded patches, attempts per window task) and the last accepted checkpoint."""

    current: LoopState
    accepted: Checkpoint
    fixes_since_check: int = 0

    @property
    def attempts(self) -> dict[str, int]:
        return dict(self.current.extra.get("attempts", {}))


def loop_state(artifact_id: str, window: Sequence[str], cursor: int, memories: Sequence[str],
               attempts: Mapping[str, int]) -> LoopState:
    """A LoopState whose only extra state is the attempts per window task."""
    return LoopState(artifact_id, tuple(window), cursor, tuple(memories), {"attempts": dict(sorted(attempts.items()))})


def state_json(state: GrowState) -> str:
    return json.dumps({"current": state.current.summary(), "accepted": state.accepted.state.summary(),
                       "accepted_scores": dict(state.accepted.scores), "fixes_since_check": state.fixes_since_check},
                      sort_keys=True)


def _loop_state_of(raw: Mapping[str, Any]) -> LoopState:
    return LoopState(raw["artifact_id"], tuple(raw["window"]), int(raw["cursor"]), tuple(raw["memories"]),
                     dict(raw["extra"]))


def state_of(text: str) -> GrowState:
    raw = json.loads(text)
    accepted = Checkpoint(_loop_state_of(raw["accepted"]), raw["accepted_scores"])
    return GrowState(_loop_state_of(raw["current"]), accepted, int(raw["fixes_since_check"]))


# -- the rolling failure window -----------------------------------------------------------


def admit(state: LoopState, outcomes: Sequence[tuple[str, bool]], size: int) -> tuple[LoopState, list[Event]]:
    """Read stream tasks in order (their outcome under the working harness): a failure
    enters the window, a success passes; the cursor advances past every task read. Stops
    when the window is full, so the tasks left unread are read again later."""
    window, cursor, attempts, events = list(state.window), state.cursor, dict(state.extra.get("attempts", {})), []
    for task_id, success in outcomes:
        if len(window) >= size:
            break
        cursor += 1
        if success:
            events.append((task_id, "pass"))
        else:
            window.append(task_id)
            attempts[task_id] = 0
            events.append((task_id, "enter"))
    return loop_state(state.artifact_id, window, cursor, state.memories, attempts), events


def settle(state: LoopState, solved: Collection[str], retry_limit: int,
           ) -> tuple[list[str], dict[str, int], list[Event]]:
    """After a repair attempt: solved tasks leave the window, the rest stay with one more
    attempt, and a task at ``retry_limit`` attempts exits unsolved. Returns (window,
    attempts, events)."""
    attempts, window, events = dict(state.extra.get("attempts", {})), [], []
    for task_id in state.window:
        if task_id in solved:
            attempts.pop(task_id, None)
            events.append((task_id, "solved"))
            continue
        attempts[task_id] = attempts.get(task_id, 0) + 1
        if attempts[task_id] >= retry_limit:
            attempts.pop(task_id)
            events.append((task_id, "exit"))
        else:
            window.append(task_id)
            events.append((task_id, "retry"))
    return window, attempts, events


def after_repair(state: GrowState, candidate: str | None, solved: Collection[str], retry_limit: int,
                 ) -> tuple[GrowState, list[Event]]:
    """The state after a repair: a patch that solved a window task becomes the working
    harness (each solved task counts as one fix); one that solved none is remembered as
    discarded and the harness stays."""
    window, attempts, events = settle(state.current, solved if candidate else (), retry_limit)
    kept = candidate is not None and bool(solved)
    memories = state.current.memories + ((candidate,) if candidate and not kept else ())
    artifact = candidate if kept else state.current.artifact_id
    current = loop_state(artifact, window, state.current.cursor, memories, attempts)
    fixes = state.fixes_since_check + (len([t for t in state.current.window if t in solved]) if kept else 0)
    return replace(state, current=current, fixes_since_check=fixes), events


# -- joint repair ---------------------------------------------------------------------------


def joint_repair(document: Mapping[str, Any], failures: Sequence[Trace], propose: Propose, batch: int,
                 is_new: Callable[[Mapping[str, Any]], bool]) -> list[RuleProposal]:
    """Up to ``batch`` edits patched jointly: each edit comes from the failures no earlier
    edit named as a trigger, applied on top of the earlier ones. Trailing edits are
    trimmed until the patched harness is one not tried before (``is_new``)."""
    edits: list[RuleProposal] = []
    while len(edits) < batch:
        covered = {case for edit in edits for case in edit.triggers}
        uncovered = [t for t in failures if t.case_id not in covered]
        if not uncovered:
            break
        edit = propose(uncovered, edits[-1].document if edits else document, edits)
        if edit is None:
            break
        edits.append(edit)
        if not set(edit.triggers) - covered:  # it repairs nothing new: patching on would loop
            break
    while edits and not is_new(edits[-1].document):
        edits.pop()
    return edits


def edit_record(edits: Sequence[RuleProposal], window: Sequence[str]) -> dict[str, Any]:
    """The ``edits`` record of a patch: what it touched and which window it repaired."""
    return {"functions_touched": [e.target for e in edits], "operators": [e.operator for e in edits],
            "triggers": sorted({c for e in edits for c in e.triggers}), "window_task_ids": list(window),
            "keys": [e.key for e in edits]}


# -- the validation gate ----------------------------------------------------------------------


def check_due(state: GrowState, gate_every: int, final: bool) -> bool:
    """Validate after every ``gate_every`` fixes and once before the final test, unless
    the gate is off (0) or the working harness is the one last accepted."""
    if gate_every == 0 or state.current.artifact_id == state.accepted.state.artifact_id:
        return False
    return final or state.fixes_since_check >= gate_every


def check(state: GrowState, scores: Mapping[str, float], *, scorer_versions: Collection[str], anchored: str,
          seed: int, tolerance: float) -> tuple[GrowState, ValidationResult]:
    """The validation gate: accept the working version, or restore the last accepted one
    whole (harness, window, cursor, memories, attempts); the fix count restarts."""
    result = validate_or_rollback(state.current, scores, state.accepted, scorer_versions=scorer_versions,
                                  anchored=anchored, seed=seed, tolerance=tolerance)
    return GrowState(result.resume, result.accepted, 0), result
