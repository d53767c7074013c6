"""Turns of a toolsim conversation as Better Turns scores them. Pure.

A *turn* is one decision of the agent: a tool call, a wait, a pick (the agent choosing an
element of a listing), or ``stop`` (ending the conversation). The reference history is a
trajectory of toolsim's scripted agent (``reference.json``); a policy sees a turn's
context (``State.features``) and names an ``Action`` whose arguments are delexicalised:
``$name`` where a value equals a variable the conversation holds (the request's fields,
merged tool results, the picked element), so what is learnt on one conversation
transfers to another.

Per turn (gold history, the paper's L1–L3):

- L1 ``similarity``: token F1 between the rendered predicted and reference turns;
- L2 ``judge_ok``: a rule-based judge (the paper's LM judge): same action as the
  reference, every ``$name`` bound and the arguments valid for the tool; for a text
  turn also at least half the reference's words (token F1 ≥ 0.5 of the text arguments);
- L3 ``exact``: the same action with exactly the same resolved arguments.

``kind`` is "text" for customer-facing text turns (``send_message``, ``create_ticket``:
a message or ticket subject the customer reads), "tool" for every other turn.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from suites.toolsim.harness import VAR
from suites.toolsim.tools import TOOLS, ToolError, validate_args

TEXT_TOOLS = ("send_message", "create_ticket")
STOP = "stop"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Action:
    kind: str
    """"call", "pick", "wait" or "stop"."""
    name: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """The policy's class: the action with its delexicalised arguments."""
        return json.dumps([self.kind, self.name, self.args], sort_keys=True)

    @staticmethod
    def of_label(label: str) -> "Action":
        kind, name, args = json.loads(label)
        return Action(kind, name, args)


def turn_kind(action: Action) -> str:
    return "text" if action.kind == "call" and action.name in TEXT_TOOLS else "tool"


def resolve(value: Any, variables: Mapping[str, Any]) -> Any:
    """``$name`` placeholders filled from ``variables`` (KeyError names an unbound one)."""
    if isinstance(value, dict):
        return {k: resolve(v, variables) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    whole = VAR.fullmatch(value)
    if whole:
        return variables[whole.group(1)]
    return VAR.sub(lambda m: str(variables[m.group(1)]), value)


def delexicalise(name: str, value: Any, variables: Mapping[str, Any]) -> Any:
    """``value`` of argument ``name`` with variable values replaced by ``$variable``: a
    whole value (a mapping or a list too) by the variable of the same name first, then by
    any variable equal to it (numbers only by ``name`` or ``next_<name>``: a page number
    is not a quantity), and inside a text every string variable's value (longest first)."""
    if isinstance(value, (dict, list)):
        equal = sorted(k for k, v in variables.items() if isinstance(v, type(value)) and v == value)
        if equal:
            return f"${name}" if name in equal else f"${equal[0]}"
        return {k: delexicalise(k, v, variables) for k, v in value.items()} if isinstance(value, dict) else value
    scalar = {k: v for k, v in variables.items() if isinstance(v, (str, int)) and not isinstance(v, bool)}
    if isinstance(value, int) and not isinstance(value, bool):
        return next((f"${k}" for k in (name, f"next_{name}") if scalar.get(k) == value), value)
    if not isinstance(value, str):
        return value
    if scalar.get(name) == value:
        return f"${name}"
    equal = sorted(k for k, v in scalar.items() if v == value)
    if equal:
        return f"${equal[0]}"
    for key, text in sorted(((k, v) for k, v in scalar.items() if isinstance(v, str) and len(v) >= 3),
                            key=lambda kv: (-len(kv[1]), kv[0])):
        value = value.replace(text, f"${key}")
    return value


def bound_args(action: Action, variables: Mapping[str, Any]) -> dict[str, Any]:
    """A call's resolved arguments, every required argument still missing filled from the
    variable of its name (as toolsim's agent binds them); KeyError for an unbound one."""
    args = {k: resolve(v, variables) for k, v in action.args.items()}
    if action.kind == "call" and action.name in TOOLS:
        for name, arg in TOOLS[action.name].args.items():
            if arg.required and name not in args and name in variables:
                args[name] = variables[name]
    return args


def render(action: Action, variables: Mapping[str, Any]) -> str:
    """One line: the action and its resolved arguments (placeholders left where unbound)."""
    try:
        args = bound_args(action, variables)
    except KeyError:
        args = dict(action.args)
    return f"{action.kind} {action.name} {json.dumps(args, sort_keys=True)}" if args else f"{action.kind} {action.name}"


def token_f1(pred: str, ref: str) -> float:
    """Token F1 of two lines (lower-cased alphanumeric runs, multiset overlap); 1 for two empty ones."""
    a, b = Counter(_WORD.findall(pred.lower())), Counter(_WORD.findall(ref.lower()))
    if not a and not b:
        return 1.0
    overlap = sum((a & b).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(a.values()), overlap / sum(b.values())
    return 2 * precision * recall / (precision + recall)


def exact(pred: Action, ref: Action, variables: Mapping[str, Any]) -> bool:
    """L3: the same action and exactly the same resolved arguments."""
    if (pred.kind, pred.name) != (ref.kind, ref.name):
        return False
    try:
        return bound_args(pred, variables) == bound_args(ref, variables)
    except KeyError:
        return False


def judge_ok(pred: Action, ref: Action, variables: Mapping[str, Any]) -> bool:
    """L2: the rule-based judge's verdict on one turn (module docstring)."""
    if (pred.kind, pred.name) != (ref.kind, ref.name):
        return False
    try:
        args = bound_args(pred, variables)
    except KeyError:
        return False
    if pred.kind == "call":
        try:
            validate_args(pred.name, args)
        except ToolError:
            return False
    return turn_kind(ref) == "tool" or token_f1(_words(args), _words(bound_args(ref, variables))) >= 0.5


def _words(args: Mapping[str, Any]) -> str:
    """What a customer reads of a call: its text arguments (ids left out)."""
    return " ".join(v for k, v in sorted(args.items()) if isinstance(v, str) and not k.endswith("_id"))
