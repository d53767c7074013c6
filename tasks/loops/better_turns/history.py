"""A conversation's history as the policy sees it, and the reference decisions it holds.
Pure.

``State`` follows one conversation step by step: the variables (the request's fields,
then every successful call's top-level result fields, a listing's later pages appended
to its first, as toolsim's pager does; a pick's chosen element), the last two actions,
the last outcome and how many errors in a row. ``features`` is what the policy reads at
the next turn. ``reference_turns`` turns a reference trajectory into its decisions:
(context, action) for every step and a final ``stop``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from tasks.loops.better_turns.turns import STOP, Action, delexicalise

CATEGORICAL_MAX = 12
"""Variables that are booleans or short words without digits are categorical: features."""


def _signature(action: Action | None) -> str:
    return "start" if action is None else f"{action.kind}:{action.name}"


def _categorical(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, str) and len(value) <= CATEGORICAL_MAX and not any(ch.isdigit() for ch in value)


@dataclass
class State:
    template: str
    variables: dict[str, Any]
    previous: Action | None = None
    before: Action | None = None
    outcome: str = "start"
    streak: int = 0
    last_result: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def start(template: str, request: Mapping[str, Any]) -> "State":
        return State(template, json.loads(json.dumps(dict(request))))

    def features(self) -> list[str]:
        """The turn's context as feature strings (one-hot inputs of the policy)."""
        t, p, o, p2 = self.template, _signature(self.previous), self.outcome, _signature(self.before)
        found = [f"t={t}", f"p={p}", f"o={o}", f"p|o={p}|{o}", f"t|p={t}|{p}", f"t|p|o={t}|{p}|{o}",
                 f"t|p|o|p2={t}|{p}|{o}|{p2}", f"p|o|s={p}|{o}|{self.streak}", f"t|p|o|s={t}|{p}|{o}|{self.streak}"]
        for key, value in sorted(self.variables.items()):
            if _categorical(value):
                found += [f"v:{key}={value}", f"t|p|v={t}|{p}|{key}={value}"]
        return found

    def action_of(self, step: Mapping[str, Any]) -> Action:
        """The delexicalised action a recorded toolsim step took in this state."""
        args = json.loads(step["args_json"])
        if step["kind"] == "tool_call":
            return Action("call", step["name"], {k: delexicalise(k, v, self.variables) for k, v in args.items()})
        if step["kind"] == "pick":
            return Action("pick", step["name"], args)
        if step["kind"] == "wait":
            return Action("wait", "wait", args)
        raise ValueError(f"a {step['kind']!r} step is no turn a policy takes (the reference harness has no checks)")

    def advance(self, step: Mapping[str, Any]) -> None:
        """Take one recorded step into the state (its action must come from ``action_of``
        on this state, before the call)."""
        action = self.action_of(step)
        raw = json.loads(step["result_json"])
        if step["ok"]:
            result = raw.get("result") or {}
            self._merge(action, json.loads(step["args_json"]), result)
            more = bool(result.get("next_page")) or bool(result.get("stale"))
            self.outcome, self.streak = ("ok:more" if more else "ok"), 0
        else:
            self.outcome, self.streak = raw["error"]["code"], min(self.streak + 1, 3)
        self.before, self.previous = self.previous, action

    def _merge(self, action: Action, args: Mapping[str, Any], result: Mapping[str, Any]) -> None:
        if action.kind == "wait":
            return
        later_page = (action.kind == "call" and isinstance(args.get("page"), int) and args["page"] > 1
                      and self.previous is not None and self.previous.name == action.name)
        fields = {k: v for k, v in result.items() if k != "stale"}
        if later_page:
            fields = {k: (self.variables[k] + v if isinstance(v, list) and isinstance(self.variables.get(k), list)
                          else v) for k, v in fields.items()}
        self.variables.update(fields)
        self.last_result = dict(result)


@dataclass(frozen=True)
class Turn:
    """One reference decision: its context and what the reference did there."""

    index: int
    features: tuple[str, ...]
    action: Action
    variables: dict[str, Any]
    """The variables the turn was taken with (to resolve and judge a prediction)."""


def reference_turns(template: str, request: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """Every decision of a reference trajectory, then its ``stop``."""
    state, turns = State.start(template, request), []
    for index, step in enumerate(steps):
        snapshot = json.loads(json.dumps(state.variables))
        turns.append(Turn(index, tuple(state.features()), state.action_of(step), snapshot))
        state.advance(step)
    turns.append(Turn(len(steps), tuple(state.features()), Action(STOP, STOP), json.loads(json.dumps(state.variables))))
    return turns
