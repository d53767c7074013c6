"""One MACE round on toolsim requests (pure: the trusted toolsim simulation, no I/O).

sample -> execute -> score -> distill for a batch of requests under one memory version:
each request's roles get their injections (``selector.select``), the agent runs with the
rendered harness (``forms.harness_for``), the task result is the verifier's success, and
the round's feedback updates the memory (``selector.update``) while new units are mined
from the round's own logs (``memory.mine_units``). Memory is data (a harness document
validated by ``load_harness``), so it runs in the trusted simulation as every toolsim
loop's scorer does; no candidate program runs.

Deviation: toolsim's procedural agent plays every role (intake, lookup, action, verify
are the tools it calls in turn), in place of the paper's LLM agents.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from suites.base import Case
from suites.toolsim.episode import Episode, run_episode
from suites.toolsim.harness import load_harness
from tasks.loops.mace.forms import harness_for
from tasks.loops.mace.memory import ROLE_TOOLS, ROLES, Memory, Unit, add_units, mine_units
from tasks.loops.mace.selector import Injection, Limits, select, update
from tasks.proposers.rule_evidence import Trace, trace_of, via_of

Miner = Callable[[Sequence[Trace]], "list[Unit]"]
"""Logs in, units out: ``memory.mine_units`` (the default) or ``llm.llm_units``."""


@dataclass(frozen=True)
class Attempt:
    case: Case
    injections: tuple[Injection, ...]
    episode: Episode

    @property
    def result(self) -> float:
        return float(self.episode.evaluation.success)


def run_request(case: Case, memory: Memory, injections: Sequence[Injection]) -> Episode:
    """execute: the request under its roles' rendered units."""
    rendered = [(inj.role, [memory.units[u] for u in inj.units], inj.form) for inj in injections]
    return run_episode(case.payload, load_harness(harness_for(rendered, case.payload["template"])))


def attempt(case: Case, memory: Memory, selector: str, limits: Limits, rng: random.Random,
            greedy: bool = False) -> Attempt:
    injections = tuple(select(memory, case.payload["template"], selector, limits, rng, greedy))
    return Attempt(case, injections, run_request(case, memory, injections))


def step_role(step: dict[str, Any]) -> str:
    """The role a trajectory step belongs to: checks verify; intake and lookup tools are
    theirs; every other step acts."""
    if step["kind"] == "check":
        return "verify"
    return next((role for role, tools in ROLE_TOOLS.items() if step["name"] in tools), "action")


def role_outputs(episode: Episode) -> dict[str, list[dict[str, Any]]]:
    """Every role's steps (name, ok, result and the rule or skill behind it), in order."""
    out: dict[str, list[dict[str, Any]]] = {role: [] for role in ROLES}
    for step in episode.steps:
        out[step_role(step)].append({"step": step["step"], "name": step["name"], "ok": step["ok"],
                                     "via": via_of(step), "result": json.loads(step["result_json"])})
    return out


@dataclass(frozen=True)
class Round:
    attempts: tuple[Attempt, ...]
    memory: Memory
    """The memory after the round's feedback and mining."""


def co_learn_round(memory: Memory, cases: Sequence[Case], selector: str, limits: Limits, smoothing: float,
                   max_units: int, rng: random.Random, feedback: bool = True, miner: Miner = mine_units) -> Round:
    """One round: every case attempted under ``memory``, then (``feedback``) the update
    and the units mined from the round's logs. ``feedback=False`` is the paper's ablation:
    the memory never changes."""
    attempts = tuple(attempt(case, memory, selector, limits, rng) for case in cases)
    if not feedback:
        return Round(attempts, memory)
    updated = update(memory, [(a.injections, a.result) for a in attempts], smoothing)
    traces = [trace_of(a.case.case_id, a.case.payload, a.episode) for a in attempts]
    return Round(attempts, add_units(updated, miner(traces), max_units))


def seed_memory(cases: Sequence[Case], max_units: int, miner: Miner = mine_units) -> tuple[list[Attempt], Memory]:
    """The past logs (the seed harness, no memory, on ``cases``) and the MemGoG their
    failures yield: the memory a first run starts from."""
    empty = Memory()
    logs = [Attempt(c, (), run_request(c, empty, [])) for c in cases]
    traces = [trace_of(a.case.case_id, a.case.payload, a.episode) for a in logs]
    return logs, add_units(empty, miner(traces), max_units)


def success_on(memory: Memory, cases: Sequence[Case], limits: Limits, selector: str) -> dict[str, float]:
    """Greedy (posterior-mean) ``selector`` on ``cases``: case id -> success."""
    rng = random.Random(0)  # greedy draws nothing
    return {c.case_id: attempt(c, memory, selector, limits, rng, greedy=True).result for c in cases}
