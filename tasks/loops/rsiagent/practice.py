"""Execution, verification and memory writing on one practice task (pure: the trusted
toolsim simulation, no I/O).

- execute: the execution agent (toolsim's frozen procedural agent) drives the backend
  with the harness the current memory gives (``memory.harness_of``).
- verify: the independent verification agent judges the backend's end state against the
  template's expected state (goal and guard conditions), never the agent's own report;
  its failure cause is the attempt's signature (``memory.signature``).
- distill: on a failed attempt the memory writer (the rule proposer, or the chat
  endpoint under ``proposer: llm``) proposes one harness edit from the trace and its
  verdict; the edited item becomes an entry, the revised memory is re-run on the same task
  (same world, same fault schedule), and the entry is kept only when the verifier passes
  that run (a verified recovery).

Memory is data (a harness document validated by ``parse_harness``), not code, so it runs
in the trusted simulation as every toolsim loop's scorer does; no candidate program runs.
Deviation: toolsim's procedural agent stands in for the paper's LLM executor.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from schemas.rsiagent import EVENTS
from suites.base import Case
from suites.toolsim.episode import Episode, run_episode
from suites.toolsim.harness import load_harness
from suites.toolsim.suite import reseeded
from tasks.loops.rsiagent.memory import Entry, harness_of, make_entry, revise, signature
from tasks.proposers.rule_evidence import Evidence, Trace, trace_of
from tasks.proposers.rules import NoRuleEvidence, RuleProposer

Writer = Callable[[Trace, Mapping[str, Any], random.Random], "dict[str, Any] | None"]
"""(failed trace with its verdict, the memory's harness, rng) -> the edited harness, or None."""


@dataclass(frozen=True)
class Verdict:
    passed: bool
    cause: str | None
    progress: float
    trace: Trace


def practice_case(source: Case, event: str, noise_seed: int) -> Case:
    """The practice task of a cell: the source train case under the event's fault rate and
    the task's own noise."""
    case = reseeded(source, noise_seed)
    return Case(case.case_id, case.split, {**case.payload, "fault_rate": EVENTS[event]})


def execute(case: Case, harness: Mapping[str, Any]) -> Episode:
    return run_episode(case.payload, load_harness(dict(harness)))


def verify(case: Case, episode: Episode) -> Verdict:
    """The verifier: the backend's end state against the expected state."""
    trace = trace_of(case.case_id, case.payload, episode)
    return Verdict(trace.success, signature(trace), trace.progress, trace)


def rule_writer(trace: Trace, harness: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """The honest default memory writer: the rule proposer's edit from the verdict."""
    try:
        return RuleProposer().propose(Evidence.of([trace]), dict(harness), rng).document
    except NoRuleEvidence:
        return None


def _canon(item: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "note")}, sort_keys=True)


def edited_items(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(kind, item) of every rule or skill in ``after`` that ``before`` does not hold."""
    out = []
    for kind, key in (("rule", "rules"), ("skill", "skills")):
        old = {_canon(i) for i in before.get(key, [])}
        out += [(kind, dict(i)) for i in after.get(key, []) if _canon(i) not in old]
    return out


@dataclass(frozen=True)
class Recovery:
    """The entries a chain of edits proposed, the memory they make, and the verifier's
    verdict on the last re-run."""

    entries: tuple[Entry, ...]
    memory: list[Entry]
    episode: Episode
    verdict: Verdict


def recover(case: Case, memory: Sequence[Entry], failed: Verdict, source_run: str, max_entries: int,
            writer: Writer, rng: random.Random, edits: int = 3) -> Recovery | None:
    """The memory writer's recovery of a failed attempt: up to ``edits`` edits, each from
    the last re-run's trace and verdict, each re-run on the same task (module docstring);
    None when the writer proposes nothing usable. Verified iff ``verdict.passed``."""
    current, verdict, entries, episode = list(memory), failed, [], None
    for _ in range(edits):
        harness = harness_of(current)
        edited = writer(verdict.trace, harness, rng)
        items = edited_items(harness, edited) if edited is not None else []
        if not items:
            break
        kind, item = items[0]
        entry = make_entry(kind, item, case.payload["template"], failed.cause or "failed", [source_run])
        current = revise(current, [entry], max_entries)
        entries.append(entry)
        episode = execute(case, harness_of(current))
        verdict = verify(case, episode)
        if verdict.passed:
            break
    return Recovery(tuple(entries), current, episode, verdict) if episode is not None else None
