"""The harness document: the rules and skills a toolsim agent runs with (the candidate
artifact of this suite, ``artifact_kind = "rules"``).

A harness is plain data: a JSON/YAML mapping, human readable and diffable, that a
proposer edits structurally and ``parse_harness`` validates. Every error names where it
is, e.g. ``rules[2].action.retry.max: must be an integer in 1..5, got 9``. Unknown keys
are errors, so a misspelt field never silently does nothing.

    version: 1
    rules:                                # applied, in order, to every tool call
      - id: retry-transient               # optional, default "rules[i]"
        note: flaky backends              # optional free text
        trigger: {on_error: transient_unavailable, tool: "*"}
        action: {retry: {max: 3, backoff: 0}}
    skills:                               # replace the default plan of one template
      - name: refund-line-item
        trigger: {template: refund_damaged_item}
        steps:
          - call: get_order
          - pick: {from: items, where: {name: $product_name}, take: first}
          - call: refund_order
            args: {reason: damaged, product_id: $product_id}
        checks:                           # optional post-conditions
          - call: get_order
            expect: {status: delivered}
        retries: 0                        # re-runs of the whole skill when a step or check fails

Triggers (exactly one kind):
  ``{before: TOOL, when?: COND}`` / ``{after: TOOL, when?: COND}`` (after a success),
  ``{on_error: CODE, tool?: TOOL or "*"}``, ``{on_result: TOOL, field: F, equals: V}``.
Actions (exactly one kind) and the triggers they go with:
  ``retry: {max: 1..5, backoff?: 0..8}`` (on_error, on_result: call again, after waiting
  ``backoff`` ticks); ``paginate: {max_pages?: 1..20}`` (before a tool with a ``page``
  or ``cursor`` argument: keep reading pages while ``next_page`` / ``next_cursor`` is set
  and concatenate them; ``observations.py``);
  ``call_first: {tool, args?}`` (before: call it first; on_error: call it, then retry
  once); ``switch_tool: {tool, args?}`` (on_error: call it instead); ``then_call: {tool,
  args?}`` (after).
Conditions: ``{var: NAME, equals|not_equals|gte|lt: VALUE}`` over the agent's variables.
Values: JSON scalars, or objects of scalars (an address); a string ``"$name"`` is the
variable's value and ``$name`` inside a longer string is replaced by its text.
Steps: ``{call: TOOL, args?, when?}`` or ``{pick: {from: LIST_VAR, where?: {FIELD: V},
order_by?: FIELD, take?: first|last}, when?}``; a ``where`` field that holds a list
matches when it contains V. How the agent runs all this is documented in ``agent.py``.

Text is read as YAML 1.1 (PyYAML), where ``"*"`` must be quoted and unquoted yes, no, on
and off are booleans. Size limits (``LIMITS``) keep the trusted parent's simulation cheap
whatever a candidate returns.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import yaml

from suites.toolsim.observations import paging_argument
from suites.toolsim.templates import TEMPLATES
from suites.toolsim.tools import ERROR_CODES, TOOLS

LIMITS = {"rules": 64, "skills": 32, "steps": 40, "checks": 10, "text": 500, "document": 65536}
VAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CONDITION_OPS = ("equals", "not_equals", "gte", "lt")
ACTION_TRIGGERS = {
    "retry": ("on_error", "on_result"),
    "paginate": ("before",),
    "call_first": ("before", "on_error"),
    "switch_tool": ("on_error",),
    "then_call": ("after",),
}
TRIGGER_KINDS = ("before", "after", "on_error", "on_result")


class HarnessError(ValueError):
    """A harness document that does not follow the format; ``path`` says where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


@dataclass(frozen=True)
class Condition:
    var: str
    op: str
    value: Any


@dataclass(frozen=True)
class Trigger:
    kind: str  # one of TRIGGER_KINDS
    tool: str  # "*" matches every tool (on_error only)
    code: str | None = None
    field: str | None = None
    equals: Any = None
    when: Condition | None = None


@dataclass(frozen=True)
class Action:
    kind: str  # one of ACTION_TRIGGERS
    max: int = 1
    backoff: int = 0
    tool: str | None = None
    args: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Rule:
    rule_id: str
    trigger: Trigger
    action: Action
    note: str = ""


@dataclass(frozen=True)
class Pick:
    source: str
    where: tuple[tuple[str, Any], ...] = ()
    order_by: str | None = None
    take: str = "first"


@dataclass(frozen=True)
class Step:
    tool: str | None = None  # a call step ...
    args: tuple[tuple[str, Any], ...] = ()
    pick: Pick | None = None  # ... or a pick step
    when: Condition | None = None


@dataclass(frozen=True)
class Check:
    tool: str
    args: tuple[tuple[str, Any], ...]
    expect: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class Skill:
    name: str
    template: str
    steps: tuple[Step, ...]
    checks: tuple[Check, ...] = ()
    retries: int = 0
    note: str = ""


@dataclass(frozen=True)
class Harness:
    rules: tuple[Rule, ...] = ()
    skills: tuple[Skill, ...] = ()

    def skill_for(self, template: str) -> Skill | None:
        return next((s for s in self.skills if s.template == template), None)


def _mapping(raw: Any, path: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    """``raw`` as a dict with every required key and no unknown key."""
    if not isinstance(raw, dict):
        raise HarnessError(path, f"must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in required + optional:
            raise HarnessError(f"{path}.{key}", f"unknown field; allowed: {list(required + optional)}")
    for key in required:
        if key not in raw:
            raise HarnessError(f"{path}.{key}", "is required")
    return raw


def _one_of(raw: dict[str, Any], path: str, kinds: tuple[str, ...]) -> str:
    present = [k for k in kinds if k in raw]
    if len(present) != 1:
        raise HarnessError(path, f"must have exactly one of {list(kinds)}, got {present or 'none'}")
    return present[0]


def _integer(raw: Any, path: str, low: int, high: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not low <= raw <= high:
        raise HarnessError(path, f"must be an integer in {low}..{high}, got {raw!r:.60}")
    return raw


def _text(raw: Any, path: str, pattern: re.Pattern | None = None) -> str:
    if not isinstance(raw, str) or not raw or len(raw) > LIMITS["text"]:
        raise HarnessError(path, f"must be a non-empty string of at most {LIMITS['text']} characters")
    if pattern is not None and not pattern.match(raw):
        raise HarnessError(path, f"{raw!r:.60} is not a name (letters, digits, underscore)")
    return raw


def _tool(raw: Any, path: str, wildcard: bool = False) -> str:
    if wildcard and raw == "*":
        return raw
    if raw not in TOOLS:
        raise HarnessError(path, f"unknown tool {raw!r:.60}; tools: {sorted(TOOLS)}")
    return raw


def _value(raw: Any, path: str, nested: bool = True) -> Any:
    if raw is None or isinstance(raw, (bool, int, float)):
        return raw
    if isinstance(raw, str):
        return _text(raw, path)
    if nested and isinstance(raw, dict):
        return tuple((_text(k, f"{path}.{k}"), _value(v, f"{path}.{k}", False)) for k, v in raw.items())
    raise HarnessError(path, f"must be a string, number, boolean, null or an object of those, got {raw!r:.60}")


def _pairs(raw: Any, path: str) -> tuple[tuple[str, Any], ...]:
    if not isinstance(raw, dict):
        raise HarnessError(path, f"must be a mapping, got {type(raw).__name__}")
    return tuple((_text(k, f"{path}.{k}", NAME), _value(v, f"{path}.{k}")) for k, v in raw.items())


def _args(raw: Any, path: str, tool: str) -> tuple[tuple[str, Any], ...]:
    pairs = _pairs(raw, path)
    for name, _ in pairs:
        if name not in TOOLS[tool].args:
            raise HarnessError(f"{path}.{name}", f"{tool} has no argument {name!r}; it takes {list(TOOLS[tool].args)}")
    return pairs


def _condition(raw: Any, path: str) -> Condition:
    raw = _mapping(raw, path, ("var",), CONDITION_OPS)
    op = _one_of(raw, path, CONDITION_OPS)
    return Condition(_text(raw["var"], f"{path}.var", NAME), op, _value(raw[op], f"{path}.{op}"))


def _trigger(raw: Any, path: str) -> Trigger:
    raw = _mapping(raw, path, (), TRIGGER_KINDS + ("tool", "field", "equals", "when"))
    kind = _one_of(raw, path, TRIGGER_KINDS)
    allowed = {"before": ("when",), "after": ("when",), "on_error": ("tool",), "on_result": ("field", "equals")}[kind]
    for key in ("tool", "field", "equals", "when"):
        if key in raw and key not in allowed:
            raise HarnessError(f"{path}.{key}", f"not allowed with {kind}; allowed: {list(allowed)}")
    when = _condition(raw["when"], f"{path}.when") if "when" in raw else None
    if kind == "on_error":
        if raw["on_error"] not in ERROR_CODES:
            raise HarnessError(f"{path}.on_error", f"unknown error code {raw['on_error']!r:.60}; codes: {list(ERROR_CODES)}")
        return Trigger(kind, _tool(raw.get("tool", "*"), f"{path}.tool", wildcard=True), code=raw["on_error"])
    tool = _tool(raw[kind], f"{path}.{kind}")
    if kind == "on_result":
        _mapping(raw, path, ("on_result", "field", "equals"), ())
        return Trigger(kind, tool, field=_text(raw["field"], f"{path}.field", NAME),
                       equals=_value(raw["equals"], f"{path}.equals", False))
    return Trigger(kind, tool, when=when)


def _action(raw: Any, path: str, trigger: Trigger) -> Action:
    raw = _mapping(raw, path, (), tuple(ACTION_TRIGGERS))
    kind = _one_of(raw, path, tuple(ACTION_TRIGGERS))
    where = f"{path}.{kind}"
    if trigger.kind not in ACTION_TRIGGERS[kind]:
        raise HarnessError(where, f"needs a trigger of kind {list(ACTION_TRIGGERS[kind])}, not {trigger.kind}")
    if kind == "retry":
        body = _mapping(raw[kind], where, ("max",), ("backoff",))
        return Action(kind, max=_integer(body["max"], f"{where}.max", 1, 5),
                      backoff=_integer(body.get("backoff", 0), f"{where}.backoff", 0, 8))
    if kind == "paginate":
        body = _mapping(raw[kind] or {}, where, (), ("max_pages",))
        if paging_argument(TOOLS[trigger.tool].args) is None:
            raise HarnessError(where, f"{trigger.tool} has no page or cursor argument to paginate")
        return Action(kind, max=_integer(body.get("max_pages", 10), f"{where}.max_pages", 1, 20))
    body = _mapping(raw[kind], where, ("tool",), ("args",))
    tool = _tool(body["tool"], f"{where}.tool")
    return Action(kind, tool=tool, args=_args(body.get("args", {}), f"{where}.args", tool))


def _rule(raw: Any, path: str) -> Rule:
    raw = _mapping(raw, path, ("trigger", "action"), ("id", "note"))
    trigger = _trigger(raw["trigger"], f"{path}.trigger")
    return Rule(
        rule_id=_text(raw.get("id", path), f"{path}.id"),
        trigger=trigger,
        action=_action(raw["action"], f"{path}.action", trigger),
        note=_text(raw["note"], f"{path}.note") if "note" in raw else "",
    )


def _step(raw: Any, path: str) -> Step:
    raw = _mapping(raw, path, (), ("call", "args", "pick", "when"))
    kind = _one_of(raw, path, ("call", "pick"))
    when = _condition(raw["when"], f"{path}.when") if "when" in raw else None
    if kind == "call":
        tool = _tool(raw["call"], f"{path}.call")
        return Step(tool=tool, args=_args(raw.get("args", {}), f"{path}.args", tool), when=when)
    if "args" in raw:
        raise HarnessError(f"{path}.args", "a pick step takes no args")
    body = _mapping(raw["pick"], f"{path}.pick", ("from",), ("where", "order_by", "take"))
    take = body.get("take", "first")
    if take not in ("first", "last"):
        raise HarnessError(f"{path}.pick.take", f"must be 'first' or 'last', got {take!r:.60}")
    pick = Pick(
        source=_text(body["from"], f"{path}.pick.from", NAME),
        where=_pairs(body.get("where", {}), f"{path}.pick.where"),
        order_by=_text(body["order_by"], f"{path}.pick.order_by", NAME) if "order_by" in body else None,
        take=take,
    )
    return Step(pick=pick, when=when)


def _list(raw: Any, path: str, limit: str, minimum: int = 0) -> list[Any]:
    if not isinstance(raw, list) or not minimum <= len(raw) <= LIMITS[limit]:
        raise HarnessError(path, f"must be a list of {minimum}..{LIMITS[limit]} entries")
    return raw


def parse_steps(raw: Any, path: str) -> tuple[Step, ...]:
    """A list of skill steps (also how the default plans are read)."""
    return tuple(_step(s, f"{path}[{i}]") for i, s in enumerate(_list(raw, path, "steps", 1)))


def _check(raw: Any, path: str) -> Check:
    raw = _mapping(raw, path, ("call", "expect"), ("args",))
    tool = _tool(raw["call"], f"{path}.call")
    expect = _pairs(raw["expect"], f"{path}.expect")
    if not expect:
        raise HarnessError(f"{path}.expect", "must name at least one field")
    return Check(tool, _args(raw.get("args", {}), f"{path}.args", tool), expect)


def _skill(raw: Any, path: str) -> Skill:
    raw = _mapping(raw, path, ("name", "trigger", "steps"), ("checks", "retries", "note"))
    trigger = _mapping(raw["trigger"], f"{path}.trigger", ("template",), ())
    if trigger["template"] not in TEMPLATES:
        raise HarnessError(f"{path}.trigger.template",
                           f"unknown template {trigger['template']!r:.60}; templates: {list(TEMPLATES)}")
    checks = _list(raw.get("checks", []), f"{path}.checks", "checks")
    return Skill(
        name=_text(raw["name"], f"{path}.name"),
        template=trigger["template"],
        steps=parse_steps(raw["steps"], f"{path}.steps"),
        checks=tuple(_check(c, f"{path}.checks[{i}]") for i, c in enumerate(checks)),
        retries=_integer(raw.get("retries", 0), f"{path}.retries", 0, 3),
        note=_text(raw["note"], f"{path}.note") if "note" in raw else "",
    )


def parse_harness(doc: Any) -> Harness:
    """Validate a harness mapping (see the module docstring); HarnessError names the
    first offending rule, skill or field."""
    doc = _mapping(doc, "harness", ("version",), ("rules", "skills"))
    if doc["version"] != 1:
        raise HarnessError("harness.version", f"must be 1, got {doc['version']!r:.60}")
    rules = tuple(_rule(r, f"rules[{i}]") for i, r in enumerate(_list(doc.get("rules", []), "rules", "rules")))
    skills = tuple(_skill(s, f"skills[{i}]") for i, s in enumerate(_list(doc.get("skills", []), "skills", "skills")))
    seen: dict[str, int] = {}
    for index, skill in enumerate(skills):
        if skill.template in seen:
            raise HarnessError(f"skills[{index}].trigger.template",
                               f"{skill.template} already has a skill (skills[{seen[skill.template]}])")
        seen[skill.template] = index
    return Harness(rules, skills)


@functools.lru_cache(maxsize=64)
def _load_text(text: str) -> Harness:
    """Parsed once per distinct text: the scorer sees one candidate's text on every case,
    and a ``Harness`` is immutable, so sharing it is safe."""
    if len(text) > LIMITS["document"]:
        raise HarnessError("harness", f"{len(text)} characters; the limit is {LIMITS['document']}")
    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise HarnessError("harness", f"not valid YAML or JSON: {exc}") from None
    return parse_harness(doc)


def load_harness(source: Any) -> Harness:
    """A harness from a mapping or from YAML/JSON text (JSON is valid YAML)."""
    return _load_text(source) if isinstance(source, str) else parse_harness(source)
