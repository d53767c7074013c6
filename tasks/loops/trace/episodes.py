"""One agent's run of one toolsim task under one condition, recorded as a `Trajectory`.

toolsim's frozen procedural agent follows its strategy-free default plans (the seed
harness: no rules, no skills); each call it plans names an intent (a canonical tool).
`ViewedBackend` sits between it and the real backend: the agent under test picks the
shown name for the intent (`perturb.resolve`), the call reaches the tool that name has
in the condition's view (none: ``unknown_tool``), and the result comes back as the view
presents it. Everything here is the trusted simulation (toolsim's own, as its scorer
runs it in the parent process); no candidate code runs, so there is no sandbox. The
same payload, agent and condition give the same trajectory, byte for byte."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any, Mapping

from suites.toolsim.agent import Agent
from suites.toolsim.backend import Backend
from suites.toolsim.episode import step_budget
from suites.toolsim.faults import FaultSchedule
from suites.toolsim.harness import load_harness
from suites.toolsim.seeding import derive_seed
from suites.toolsim.templates import get_template
from suites.toolsim.tools import ToolError
from tasks.loops.trace.evidence import Step, Trajectory
from tasks.loops.trace.perturb import ToolView, present, resolve, view

SEED_HARNESS = {"version": 1, "rules": [], "skills": []}


def obs_hash(observation: Mapping[str, Any]) -> str:
    """The observation's content hash: the same fields and values hash the same in any order."""
    return hashlib.sha256(json.dumps(observation, sort_keys=True).encode()).hexdigest()[:16]


class ViewedBackend:
    """The backend as ``agent`` sees it under ``tool_view``; ``steps`` records each call
    as made (shown name, arguments, observation hash)."""

    def __init__(self, backend: Backend, agent: str, tool_view: ToolView) -> None:
        self.backend, self.agent, self.view = backend, agent, tool_view
        self.steps: list[Step] = []

    @property
    def clock(self) -> int:
        return self.backend.clock

    def advance(self, ticks: int) -> None:
        self.backend.advance(ticks)

    def call(self, intent: str, args: dict[str, Any]) -> dict[str, Any]:
        shown = resolve(self.agent, intent, self.view)
        tool = self.view.canonical(shown)
        try:
            if tool is None:
                raise ToolError("unknown_tool", f"no tool {shown!r}")
            result = present(self.backend.call(tool, args), self.view)
        except ToolError as err:
            self.steps.append(Step(shown, tuple(sorted(args.items())), obs_hash({"error": err.code})))
            raise
        self.steps.append(Step(shown, tuple(sorted(args.items())), obs_hash(result)))
        return result


def noise_seed(payload: Mapping[str, Any], condition: str, repeat: int) -> int:
    """The event-keyed fault seed of a run: shared by every condition of one repeat (the
    pair's frozen seed), another one for the identical rerun."""
    if condition == "rerun":
        return derive_seed(payload["noise_seed"], "rerun", repeat)
    return payload["noise_seed"] if repeat == 0 else derive_seed(payload["noise_seed"], "repeat", repeat)


def run_trajectory(payload: Mapping[str, Any], agent: str, condition: str, repeat: int,
                   task: str) -> Trajectory:
    """``agent`` on the toolsim case ``payload`` under ``condition``; the final state is
    the task's goal conditions evaluated on the final world (``goal:<name>`` -> met)."""
    template = get_template(payload["template"])
    scenario = template.build(payload["world_seed"])
    initial = scenario.world.clone()
    schedule = FaultSchedule(noise_seed(payload, condition, repeat), payload["fault_rate"],
                             payload.get("version", 1) >= 2)
    viewed = ViewedBackend(Backend(scenario.world, schedule), agent, view(condition))
    harness = load_harness(SEED_HARNESS)
    Agent(viewed, harness, step_budget(dict(payload), harness)).run(template.name, scenario.request)
    evaluation = template.evaluate(initial, viewed.backend.world, scenario.hidden)
    state = {f"goal:{c.name}": c.met for c in evaluation.conditions}
    return Trajectory(task, condition, tuple(viewed.steps), state)


def expected_state(trajectory: Trajectory) -> dict[str, bool]:
    """What the final-state checker requires: every goal condition met."""
    return {key: True for key in trajectory.final_state}


def required_tools(template: str) -> tuple[str, ...]:
    """What the trace matcher requires: every tool of the template's default plan."""
    return tuple(step["call"] for step in get_template(template).plan if "call" in step)


def to_json(trajectory: Trajectory) -> str:
    return json.dumps(asdict(trajectory), sort_keys=True)


def from_json(text: str) -> Trajectory:
    raw = json.loads(text)
    steps = tuple(Step(s["tool"], tuple((k, v) for k, v in s["args"]), s["obs_hash"]) for s in raw["steps"])
    return Trajectory(raw["task"], raw["condition"], steps, raw["final_state"])
