"""Verified synthesis of training instances from failure modes (pure: the trusted toolsim
simulation, no I/O).

An instance is a toolsim payload: template + parameters (the world seed the request is
built from) + injected failure events (fault rate and noise seed). The spec's four
mutation strategies become parameter generators on a source instance of the mode (a
train instance one of its supporting trajectories ran on):

1. ``same_failure``: the fix should still apply: the same template and fault rate with
   new parameters (a fresh world seed and noise seed);
2. ``counter_example``: the fix should not apply: the same request under suite version 2,
   whose writes are not idempotent (a lost acknowledgement fails a write that was
   applied), so retrying is wrong;
3. ``boundary``: a changed key boundary condition: a world in which the customer's order
   list is exactly a multiple of the page size (``list_orders``' last page is full);
4. ``distractor``: the same instance with distractor failure events added (the fault
   rate raised by ``DISTRACTOR_RATE``), which the mode is not about.

The verifier admits an instance only when it is valid (the oracle solves it: the rule
proposer's repair chain from the current rules reaches success within ``ORACLE_EDITS``
edits, so the instance is solvable and consistent) and really targets the mode (the
current rules exhibit the mode's signature on it; for a counter-example they must not).
Deviation: the paper's generator and verifier are LLMs; here they are these generators
and the simulation itself (offline, the honest default)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Mapping

from schemas.forge import STRATEGIES
from schemas.ids import content_id, seed_for
from suites.toolsim.backend import PAGE_SIZE
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness
from suites.toolsim.templates import get_template
from tasks.loops.forge.modes import FailureMode, signature
from tasks.loops.forge.prompt import rule_reflector
from tasks.proposers.rule_evidence import Trace, trace_of

DISTRACTOR_RATE = 0.3
ORACLE_EDITS = 3
SEED_SEARCH = 64
"""World seeds tried by the boundary generator before it gives up on a source."""

Payload = dict[str, Any]


def run_trace(case_id: str, payload: Mapping[str, Any], harness: Mapping[str, Any]) -> Trace:
    return trace_of(case_id, payload, run_episode(dict(payload), load_harness(dict(harness))))


def _fresh(payload: Mapping[str, Any], world_seed: int, noise_seed: int) -> Payload:
    built = get_template(payload["template"]).build(world_seed)
    return {**payload, "world_seed": world_seed, "noise_seed": noise_seed, "params": built.request}


def _full_last_page(template: str, world_seed: int) -> bool:
    scenario = get_template(template).build(world_seed)
    user = scenario.hidden.get("user_id") or (
        scenario.world.orders[scenario.hidden["order_id"]].user_id if "order_id" in scenario.hidden else None)
    count = len(scenario.world.orders_of(user)) if user else 0
    return count > 0 and count % PAGE_SIZE == 0


def generate(source: Mapping[str, Any], strategy: str, seed: int) -> Payload | None:
    """One instance of ``strategy`` from the source payload (module docstring); None when
    the strategy finds none (no boundary world within ``SEED_SEARCH`` seeds)."""
    world, noise = seed_for(seed, "world"), seed_for(seed, "noise")
    if strategy == "same_failure":
        return _fresh(source, world, noise)
    if strategy == "counter_example":
        return {**source, "version": 2, "noise_seed": noise}
    if strategy == "boundary":
        for attempt in range(SEED_SEARCH):
            candidate = seed_for(seed, "boundary", attempt)
            if _full_last_page(source["template"], candidate):
                return _fresh(source, candidate, noise)
        return None
    if strategy == "distractor":
        return {**source, "fault_rate": min(1.0, round(source["fault_rate"] + DISTRACTOR_RATE, 6))}
    raise ValueError(f"unknown synthesis strategy {strategy!r}; known: {', '.join(STRATEGIES)}")


@dataclass(frozen=True)
class Verification:
    valid: bool
    """The oracle solves the instance."""
    targets_mode: bool
    oracle_edits: int | None
    """Edits the oracle needed (0: the current rules already solve it); None: unsolved."""
    calls: int
    """Episodes the verifier ran."""
    exhibited: tuple[str, ...] | None
    """The current rules' failure signature on it (None: they solve it)."""


def oracle_edits(case_id: str, payload: Mapping[str, Any], harness: Mapping[str, Any], rng: random.Random,
                 edits: int = ORACLE_EDITS) -> tuple[int | None, int, Trace]:
    """(edits to success or None, episodes run, the current rules' trace): the oracle
    repairs the current rules on this one instance, each edit from the last re-run."""
    first = trace = run_trace(case_id, payload, harness)
    current, calls = dict(harness), 1
    for used in range(edits + 1):
        if trace.success:
            return used, calls, first
        if used == edits:
            break
        edited = rule_reflector([trace], current, rng)
        if edited is None:
            break
        current, calls = edited, calls + 1
        trace = run_trace(case_id, payload, current)
    return None, calls, first


def verify(case_id: str, payload: Mapping[str, Any], mode: FailureMode, strategy: str,
           harness: Mapping[str, Any], seed: int) -> Verification:
    """The verifier (module docstring)."""
    used, calls, first = oracle_edits(case_id, payload, harness, random.Random(seed))
    shown = signature(first)
    exhibits = shown == tuple(mode.signature)
    targets = not exhibits if strategy == "counter_example" else exhibits
    return Verification(used is not None, targets, used, calls, shown)


@dataclass(frozen=True)
class Synthesised:
    inst_id: str
    payload: Payload
    mode: FailureMode
    strategy: str
    source_id: str
    check: Verification

    @property
    def admitted(self) -> bool:
        return self.check.valid and self.check.targets_mode


def inst_id_of(payload: Mapping[str, Any]) -> str:
    return f"synth/{content_id(json.dumps(payload, sort_keys=True))[:16]}"


def synthesize(modes: list[FailureMode], pool: Mapping[str, Mapping[str, Any]], inst_of: Mapping[str, str],
               harness: Mapping[str, Any], strategies: tuple[str, ...], per_strategy: int, seed: int, step: int,
               seen: set[str]) -> list[Synthesised]:
    """Every instance the generator makes from ``modes`` (each from the training
    instance of its first supporting trajectory in ``pool``; ``inst_of``: trajectory ->
    instance id), verified under ``harness``; instance ids in ``seen`` (or made twice)
    are skipped. ``seen`` is updated."""
    out = []
    for mode in modes:
        source_id = next((inst_of[t] for t in mode.support if inst_of.get(t) in pool), None)
        if source_id is None:
            continue
        for strategy in strategies:
            for j in range(per_strategy):
                draw = seed_for(seed, "synth", step, mode.mode_id, strategy, j)
                payload = generate(pool[source_id], strategy, draw)
                inst_id = None if payload is None else inst_id_of(payload)
                if inst_id is None or inst_id in seen:
                    continue
                seen.add(inst_id)
                out.append(Synthesised(inst_id, payload, mode, strategy, source_id,
                                       verify(inst_id, payload, mode, strategy, harness, draw)))
    return out
