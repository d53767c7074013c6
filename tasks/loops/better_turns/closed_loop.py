"""Closed loop (the paper's L4–L5): a policy continues on its own history against the
case's backend, then two verdicts. Pure apart from toolsim's deterministic simulation.

The run: the case's world and fault schedule exactly as toolsim's episode builds them
(the same noise seed, so a policy that makes the reference's calls meets the
reference's faults); at each turn the policy names an action from its own state; a
tool error is handed back to it as the next turn's outcome, and past ``retries`` errors
the run ends (errors propagate: nothing repairs a wrong call). The run ends when the
policy says ``stop``, at the retry limit, or at the case's ``max_steps``.

- L4 ``completed``: the run stopped by itself with exactly the reference's calls
  (tool names and arguments, in order);
- L5, a rule-based holistic judge (the paper's LM judge): ``goal_ok`` (the template's
  goal conditions hold on the final state), ``policy_ok`` (no guard condition is
  broken) and ``tool_use_ok`` (every id a call passes, ``*_id`` arguments, was given by
  the request or by an earlier tool result: no invented or copied ids).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from suites.toolsim.agent import Agent
from suites.toolsim.backend import Backend
from suites.toolsim.faults import FaultSchedule
from suites.toolsim.harness import Harness, Pick
from suites.toolsim.templates import get_template
from tasks.loops.better_turns.history import State
from tasks.loops.better_turns.policy import Policy
from tasks.loops.better_turns.turns import STOP, Action, bound_args


@dataclass(frozen=True)
class ClosedRun:
    steps: tuple[dict[str, Any], ...]
    status: str
    """"stopped", "retry_limit" or "step_limit"."""
    retries: int
    completed: bool
    goal_ok: bool
    policy_ok: bool
    tool_use_ok: bool

    @property
    def holistic(self) -> bool:
        return self.goal_ok and self.policy_ok and self.tool_use_ok


def calls_of(steps: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The (tool, arguments) of every tool call of a trajectory, in order."""
    return [(s["name"], json.loads(s["args_json"])) for s in steps if s["kind"] == "tool_call"]


def ids_grounded(steps: Sequence[Mapping[str, Any]], request: Mapping[str, Any]) -> bool:
    """Every ``*_id`` argument of every call is a value the request or an earlier
    successful result (anywhere in it) held."""
    seen = set(_scalars(request))
    for step in steps:
        args = json.loads(step["args_json"])
        if step["kind"] == "tool_call" and any(k.endswith("_id") and v not in seen for k, v in args.items()):
            return False
        if step["ok"]:
            seen |= set(_scalars(json.loads(step["result_json"]).get("result")))
    return True


def _scalars(value: Any):
    if isinstance(value, dict):
        for inner in value.values():
            yield from _scalars(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _scalars(inner)
    elif isinstance(value, (str, int)) and not isinstance(value, bool):
        yield value


class _Driver(Agent):
    """toolsim's agent with no harness, driven turn by turn: its backend, step budget and
    step records, each turn's action chosen by the policy."""

    def take(self, action: Action, variables: dict[str, Any]) -> None:
        self.variables = variables  # the policy's state owns the variables
        if action.kind == "wait":
            self._wait(int(action.args.get("ticks", 1)))
        elif action.kind == "pick":
            a = action.args
            self._pick(Pick(action.name, tuple(sorted((a.get("where") or {}).items())), a.get("order_by"),
                            a.get("take", "first")))
        else:
            try:
                args = bound_args(action, variables)
            except KeyError as exc:
                self._guard()
                self._record("tool_call", action.name, {}, {"error": {"code": "unbound_variable",
                                                                       "message": f"{exc} is not bound",
                                                                       "injected": False}}, False)
                return
            self._invoke(action.name, args)


def run_closed_loop(policy: Policy, payload: Mapping[str, Any], reference_steps: Sequence[Mapping[str, Any]],
                    retries: int) -> ClosedRun:
    """The policy's own run on one case, and its L4/L5 verdicts (module docstring)."""
    template = get_template(payload["template"])
    scenario = template.build(payload["world_seed"])
    initial = scenario.world.clone()
    backend = Backend(scenario.world, FaultSchedule(payload["noise_seed"], payload["fault_rate"],
                                                    payload.get("version", 1) >= 2))
    driver = _Driver(backend, Harness(rules=(), skills=()), payload["max_steps"])
    state, errors, status = State.start(template.name, scenario.request), 0, "step_limit"
    while len(driver.steps) < payload["max_steps"]:
        action = policy.predict(state.features())
        if action.kind == STOP:
            status = "stopped"
            break
        driver.take(action, state.variables)
        step = driver.steps[-1]
        state.advance(step)
        errors += not step["ok"]
        if errors > retries:
            status = "retry_limit"
            break
    evaluation = template.evaluate(initial, backend.world, scenario.hidden)
    steps = tuple(driver.steps)
    return ClosedRun(
        steps=steps, status=status, retries=errors,
        completed=status == "stopped" and calls_of(steps) == calls_of(reference_steps),
        goal_ok=all(c.met for c in evaluation.conditions if not c.guard), policy_ok=not evaluation.harmed,
        tool_use_ok=ids_grounded(steps, scenario.request),
    )
