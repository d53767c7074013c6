"""One episode: build the case's scenario, run the agent under a harness with the
case's fault schedule, judge the final state. This is the trusted simulation the suite's
scorer runs in the parent process; loops that need more than the metrics (trajectories,
fault events, the final state) call it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suites.toolsim.agent import Agent
from suites.toolsim.backend import Backend
from suites.toolsim.faults import SKILL_CONTEXT_STEPS, FaultEvent, FaultSchedule, grading_flipped
from suites.toolsim.harness import Harness
from suites.toolsim.templates import Evaluation, get_template
from suites.toolsim.world import World


@dataclass(frozen=True)
class Episode:
    template: str
    status: str
    """How the plan ended: "completed", "gave_up" or "step_limit"."""
    evaluation: Evaluation
    flipped: bool
    """The grading flip fired: a true success is reported as a failure."""
    cost: float
    steps: tuple[dict[str, Any], ...]
    events: tuple[FaultEvent, ...]
    initial: World
    final: World

    @property
    def tool_calls(self) -> int:
        return sum(step["kind"] == "tool_call" for step in self.steps)

    def metrics(self) -> dict[str, float]:
        """``success`` is the true outcome; ``observed_success`` what a noisy grader
        reports (never above ``success``)."""
        success = float(self.evaluation.success)
        return {
            "success": success,
            "observed_success": 0.0 if self.flipped else success,
            "progress": self.evaluation.progress,
            "tool_calls": float(self.tool_calls),
            "cost": self.cost,
        }


def step_budget(payload: dict[str, Any], harness: Harness) -> int:
    """``max_steps``, less ``SKILL_CONTEXT_STEPS`` per loaded skill for another template
    under suite version 2 (irrelevant skills fill the context); at least 1."""
    if payload.get("version", 1) < 2:
        return payload["max_steps"]
    irrelevant = sum(skill.template != payload["template"] for skill in harness.skills)
    return max(1, payload["max_steps"] - SKILL_CONTEXT_STEPS * irrelevant)


def run_episode(payload: dict[str, Any], harness: Harness) -> Episode:
    """Simulate one case payload (``ToolSim.cases``) under ``harness``. Deterministic:
    the same payload and harness give the same episode."""
    template = get_template(payload["template"])
    scenario = template.build(payload["world_seed"])
    initial = scenario.world.clone()
    version = payload.get("version", 1)
    backend = Backend(scenario.world, FaultSchedule(payload["noise_seed"], payload["fault_rate"], version >= 2),
                      cursor_paging=version >= 3)
    agent = Agent(backend, harness, step_budget(payload, harness), truncate=version >= 3)
    status = agent.run(template.name, scenario.request)
    evaluation = template.evaluate(initial, backend.world, scenario.hidden)
    return Episode(
        template=template.name,
        status=status,
        evaluation=evaluation,
        flipped=evaluation.success and grading_flipped(payload["noise_seed"], payload["flip_rate"]),
        cost=template.cost(evaluation),
        steps=tuple(agent.steps),
        events=tuple(backend.events),
        initial=initial,
        final=backend.world,
    )
