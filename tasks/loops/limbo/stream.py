"""The request stream and one policy's pass over it (pure; the loop's Algorithm 1).

Stream: request ``t`` is a train case drawn by a seeded rng, under its own noise seed and
an injected fault rate drawn from ``fault_rates`` (toolsim's fault injection is
deterministic and event-keyed, so the same request replays the same faults under every
arm). A policy is the controller or one fixed arm; every policy sees the same requests,
and a request's in-request repairs draw from the same rng whatever the policy: the
comparison is paired per request.

One iteration per request: features -> the controller's choice (sample) -> the chosen
arm only runs (execute) -> success and tokens (score) -> a success becomes a memory
entry (distill), admitted by the gate (only successes; the oldest evicted past
capacity) -> the chosen arm's statistics are updated (register).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Sequence

from schemas.ids import seed_for
from schemas.limbo import LimboConfig
from suites.base import Case
from suites.toolsim.suite import reseeded
from tasks.loops.limbo.agent import Outcome, Repairer, rule_repair, run_request
from tasks.loops.limbo.controller import Choice, Controller, Head, features
from tasks.loops.limbo.memory import ARMS, Entry, admit, arm_of, context, entry_of, make_entry, memory_id

CONTROLLER = "controller"


@dataclass(frozen=True)
class Request:
    t: int
    task_id: str
    case: Case


def stream(cases: Sequence[Case], n: int, fault_rates: Sequence[float], seed: int) -> list[Request]:
    """``n`` requests drawn from ``cases`` (module docstring)."""
    pool = sorted(cases, key=lambda c: c.case_id)
    out = []
    for t in range(n):
        rng = random.Random(seed_for(seed, "stream", t))
        source = pool[rng.randrange(len(pool))]
        case = reseeded(source, seed_for(seed, "noise", t))
        rate = float(fault_rates[rng.randrange(len(fault_rates))])
        out.append(Request(t, f"{source.case_id}@{t:04d}", Case(case.case_id, case.split,
                                                                {**case.payload, "fault_rate": rate})))
    return out


def policy_name(arm: str | None) -> str:
    return CONTROLLER if arm is None else f"fixed:{arm}"


@dataclass
class State:
    """What persists across requests: the memory, eviction times, recent outcomes and
    (for the controller) the arms' statistics."""

    memory: list[Entry] = field(default_factory=list)
    evicted: dict[str, int] = field(default_factory=dict)
    added: dict[str, Entry] = field(default_factory=dict)
    recent: list[tuple[bool, float]] = field(default_factory=list)
    controller: Controller | None = None

    def as_json(self) -> dict[str, Any]:
        return {"memory": [e.as_json() for e in self.memory], "evicted": self.evicted,
                "added": {k: e.as_json() for k, e in self.added.items()},
                "recent": [[s, c] for s, c in self.recent],
                "controller": None if self.controller is None else self.controller.state()}


def state_of(raw: dict[str, Any], config: LimboConfig) -> State:
    import numpy as np

    controller = None
    if raw["controller"] is not None:
        controller = new_controller(config)
        for arm, h in raw["controller"].items():
            controller.heads[arm] = Head(np.array(h["a"]), np.array(h["b_s"]), np.array(h["b_c"]), h["pulls"])
    return State([entry_of(e) for e in raw["memory"]], dict(raw["evicted"]),
                 {k: entry_of(e) for k, e in raw["added"].items()}, [(bool(s), float(c)) for s, c in raw["recent"]],
                 controller)


def new_controller(config: LimboConfig) -> Controller:
    return Controller(tuple(a.id for a in ARMS), config.alpha, config.cost_weight, config.ridge)


def initial_state(config: LimboConfig, arm: str | None) -> State:
    return State(controller=new_controller(config) if arm is None else None)


@dataclass(frozen=True)
class Step:
    request: Request
    features: list[float]
    arm: str
    choice: Choice | None
    outcome: Outcome
    entry: Entry | None
    """The admitted entry (a success), else None."""
    mem_ver: str
    memory: tuple[Entry, ...]
    """The memory after this request's gate (``mem_ver`` is its content id)."""
    evicted: tuple[str, ...]
    execution_id: str


def play(requests: Sequence[Request], arm: str | None, state: State, config: LimboConfig, seed: int,
         execution_id=lambda request: f"{request.task_id}", repairer: Repairer = rule_repair) -> list[Step]:
    """One policy (``arm`` None: the controller) over ``requests``; ``state`` is updated."""
    steps = []
    for request in requests:
        template = request.case.payload["template"]
        x = features(template, request.case.payload["params"], state.recent[-config.window:],
                     any(e.template == template for e in state.memory), len(state.memory) / config.capacity)
        choice = state.controller.choose(x) if state.controller is not None else None
        chosen = arm_of(choice.arm if choice else arm)
        harness, tokens = context(chosen.mode, state.memory, template, config.retrieve_k)
        outcome = run_request(request.case, chosen, harness, tokens, random.Random(seed_for(seed, "repair", request.t)),
                              repairer)
        eid, entry, evicted = execution_id(request), None, []
        if outcome.success:
            entry = make_entry(template, request.t, eid, outcome.harness, outcome.episode.steps)
            state.memory, evicted = admit(state.memory, entry, config.capacity)
            state.added[entry.entry] = entry
            state.evicted.update({e.entry: request.t for e in evicted})
        cost = outcome.tokens / 1000.0
        state.recent = [*state.recent, (outcome.success, cost)][-config.window:]
        if state.controller is not None:
            state.controller.update(chosen.id, x, outcome.success, cost)
        steps.append(Step(request, x, chosen.id, choice, outcome, entry, memory_id(state.memory), tuple(state.memory),
                          tuple(e.entry for e in evicted), eid))
    return steps


def state_bytes(state: State) -> bytes:
    return json.dumps(state.as_json(), sort_keys=True).encode()
