"""The budgeted agent on one request (pure: the trusted toolsim simulation, no I/O).

The frozen agent is toolsim's procedural agent plus the rule proposer as its own
in-request repair (``proposer: llm``: the chat endpoint, ``llm.py``): an attempt runs
the request under the arm's harness (the memory mode's context) with the step cap
``tool_calls``; when it fails and turns are left, the agent reads its failed trace,
edits its harness once (one repair is charged ``gen_len`` tokens) and tries again from the start (same world, same fault
schedule: a fresh attempt at the same request). Success is the verifier's judgement of
the last attempt's end state.

Tokens (the paper's cost proxy): the context the mode loads, once per attempt, plus
every recorded step's arguments and result (chars / 4), plus ``gen_len`` per repair.
Deviation: toolsim's procedural agent stands in for the paper's LLM agent, so
"generation length" is charged, not generated.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from suites.base import Case
from suites.toolsim.episode import Episode, run_episode
from suites.toolsim.harness import load_harness
from tasks.loops.limbo.memory import Arm, tokens_of
from tasks.proposers.rule_evidence import Evidence, Trace, trace_of
from tasks.proposers.rules import NoRuleEvidence, RuleProposer

Repairer = Callable[[Trace, Mapping[str, Any], random.Random], "dict[str, Any] | None"]
"""(failed trace, the harness it ran with, rng) -> the edited harness, or None."""


@dataclass(frozen=True)
class Outcome:
    success: bool
    turns_used: int
    tokens: int
    harness: Mapping[str, Any]
    """The harness the last attempt ran with."""
    episode: Episode


def capped(case: Case, tool_calls: int) -> dict[str, Any]:
    """The request's payload under the arm's step cap."""
    return {**case.payload, "max_steps": min(int(case.payload["max_steps"]), tool_calls)}


def rule_repair(trace: Trace, harness: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """The honest default in-request repair: the rule proposer's edit of the harness from
    the failed trace, or None when it finds nothing to change."""
    try:
        return RuleProposer().propose(Evidence.of([trace]), dict(harness), rng).document
    except NoRuleEvidence:
        return None


def attempt_tokens(episode: Episode, context_tokens: int) -> int:
    return context_tokens + sum(tokens_of([s["args_json"], s["result_json"]]) for s in episode.steps)


def run_request(case: Case, arm: Arm, harness: Mapping[str, Any], context_tokens: int,
                rng: random.Random, repairer: Repairer = rule_repair) -> Outcome:
    """Only the chosen arm runs: up to ``arm.turns`` attempts (module docstring)."""
    payload, current, tokens = capped(case, arm.tool_calls), dict(harness), 0
    for turn in range(1, arm.turns + 1):
        episode = run_episode(payload, load_harness(current))
        tokens += attempt_tokens(episode, context_tokens)
        if episode.evaluation.success or turn == arm.turns:
            break
        edited = repairer(trace_of(case.case_id, case.payload, episode), current, rng)
        tokens += arm.gen_len
        if edited is None:
            break
        current = edited
    return Outcome(bool(episode.evaluation.success), turn, tokens, current, episode)
