"""The procedural agent: runs one request against the backend under a harness and
records every step as a trajectory.

Plan. The skill whose trigger names the request's template, else the template's
strategy-free default plan (``plans.py``). A skill attempt runs its steps, then its
checks; a failed call (after the rules had their say), a pick with no match or a check
that does not hold ends the attempt, and the skill is re-run from its first step up to
``retries`` times. The episode ends when the plan finishes, gives up, or reaches
``max_steps`` recorded steps (tool calls, waits, picks and checks all count), so no
harness can loop forever.

Variables. The request's fields start the agent's variables; every successful call
merges its result's top-level fields into them (``user_id``, ``tier``, ``orders``,
``ticket_id`` ...; the replica's ``stale`` marker is not kept), and a pick merges the
chosen element's fields. A call's arguments are: those the triggering call passes on
(for calls made by rule actions), then the step's or action's explicit ``args``, then,
for every *required* argument still missing, the variable of the same name. An explicit
``$name`` that is not bound fails the call as ``unbound_variable`` without reaching the
backend.

Rules, in document order, on every call at depth 0 (plan steps and checks) and 1 (calls
made by rule actions); calls at depth 2 run bare, which bounds recursion:

1. ``before`` rules whose tool and ``when`` match: ``call_first`` calls its tool (a
   failure fails the call); ``paginate`` marks the call for paging.
2. The call. On an error, the first ``on_error`` rule matching (code, tool) with budget
   left reacts: ``retry`` waits ``backoff`` ticks and calls again (at most ``max`` times
   per call), ``switch_tool`` calls its tool instead (once), ``call_first`` calls its
   tool and then the original again (once). On a success, the first matching
   ``on_result`` rule with budget left retries. With no rule left, the outcome stands.
3. Paging: while the tool's next-page field is set (``next_page``, or ``next_cursor``
   for a cursor-paged tool; up to ``max_pages`` pages), read the next page through step
   2 and concatenate the list fields. Under suite version 3 the merged observation is
   then truncated (``observations.py``) before the agent keeps it.
4. ``after`` rules whose tool and ``when`` match (after the merge): ``then_call``.

Trajectory steps are dicts with the fields of ``schemas.rows.StepRow`` other than
``run_id`` and ``execution_id``: kind "tool_call" (name = tool), "wait" (a backoff),
"pick" (name = list variable) or "check" (name = tool); ``args_json`` and
``result_json`` as JSON (``{"result": ...}`` or ``{"error": {"code", "message",
"injected"}}``, plus ``"via"``: the id of the rule whose action caused the step, or the
name of the skill whose step or check it is, ``"default:<template>"`` for a default
plan), ``ok``, and ``reward``/``logprob``/``teacher_logprob`` None. ``via`` is what lets
a proposer see which rule fired and which step of which skill failed.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from suites.toolsim.backend import Backend
from suites.toolsim.harness import VAR, Action, Condition, Harness, Pick, Skill, parse_steps
from suites.toolsim.observations import PAGING, paging_argument, truncated
from suites.toolsim.templates import get_template
from suites.toolsim.tools import TOOLS, ToolError

MAX_RULE_DEPTH = 2
_MISSING = object()
Pairs = tuple[tuple[str, Any], ...]


class StepLimitReached(Exception):
    """The episode used its ``max_steps``; ends the episode, never escapes ``run``."""


class Unbound(Exception):
    """An explicit ``$name`` names no variable."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    result: dict[str, Any] | None = None
    code: str | None = None


@functools.lru_cache(maxsize=None)
def default_skill(template: str) -> Skill:
    """The template's default plan as a skill (no checks, no retries)."""
    steps = parse_steps(list(get_template(template).plan), f"plans.{template}")
    return Skill(name=f"default:{template}", template=template, steps=steps)


def _matches(value: Any, wanted: Any) -> bool:
    return wanted in value if isinstance(value, list) else value == wanted


def _sort_key(value: Any) -> tuple[int, Any]:
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return (0, value) if number else (1, str(value))


def _action_budget(action: Action) -> int:
    return action.max if action.kind == "retry" else 1


class Agent:
    """Runs one request under a harness (see the module docstring)."""

    def __init__(self, backend: Backend, harness: Harness, max_steps: int, truncate: bool = False) -> None:
        self.backend, self.harness, self.max_steps, self.truncate = backend, harness, max_steps, truncate
        self.steps: list[dict[str, Any]] = []
        self.variables: dict[str, Any] = {}
        self._via = ""

    def run(self, template: str, request: dict[str, Any]) -> str:
        """"completed", "gave_up" or "step_limit": how the plan ended, not whether the
        request was served (only the backend's final state says that)."""
        self.variables = json.loads(json.dumps(request))
        skill = self.harness.skill_for(template) or default_skill(template)
        try:
            return "completed" if self._run_skill(skill) else "gave_up"
        except StepLimitReached:
            return "step_limit"

    def _run_skill(self, skill: Skill) -> bool:
        with self._caused_by(skill.name):
            for _ in range(skill.retries + 1):
                if self._run_steps(skill) and self._run_checks(skill):
                    return True
        return False

    @contextlib.contextmanager
    def _caused_by(self, via: str | None) -> Iterator[None]:
        """Attribute the steps recorded inside to ``via`` (None: keep the current cause)."""
        outer = self._via
        self._via = via or outer
        try:
            yield
        finally:
            self._via = outer

    def _run_steps(self, skill: Skill) -> bool:
        for step in skill.steps:
            if step.when is not None and not self._holds(step.when):
                continue
            ok = self._pick(step.pick) if step.pick is not None else self._call(step.tool, step.args, 0).ok
            if not ok:
                return False
        return True

    def _run_checks(self, skill: Skill) -> bool:
        for check in skill.checks:
            outcome = self._call(check.tool, check.args, 0)
            if not outcome.ok:
                return False
            self._guard()
            try:
                expected = {name: self._resolve(value) for name, value in check.expect}
            except Unbound as exc:
                self._record("check", check.tool, {}, _agent_error("unbound_variable", str(exc)), False)
                return False
            actual = {name: outcome.result.get(name) for name in expected}
            held = all(actual[name] == expected[name] for name in expected)
            self._record("check", check.tool, expected, {"result": actual}, held)
            if not held:
                return False
        return True

    # -- one call through the rules ----------------------------------------------------

    def _call(self, tool: str, explicit: Pairs, depth: int, inherited: dict[str, Any] | None = None) -> Outcome:
        try:
            args = self._bind(tool, explicit, inherited or {})
        except Unbound as exc:
            self._guard()
            self._record("tool_call", tool, {}, _agent_error("unbound_variable", str(exc)), False)
            return Outcome(False, code="unbound_variable")
        ruled = depth < MAX_RULE_DEPTH
        pager = None
        for rule in self._triggered("before", tool) if ruled else ():
            if rule.action.kind == "paginate":
                pager = pager or rule
                continue
            with self._caused_by(rule.rule_id):
                first = self._call(rule.action.tool, rule.action.args, depth + 1, args)
            if not first.ok:
                return first
        outcome = self._attempt(tool, args, depth)
        if outcome.ok and pager is not None:
            with self._caused_by(pager.rule_id):
                outcome = self._paginate(tool, args, outcome, pager.action.max, depth)
        if not outcome.ok:
            return outcome
        if self.truncate:
            outcome = Outcome(True, truncated(outcome.result))
        self._merge(outcome.result)
        for rule in self._triggered("after", tool) if ruled else ():
            with self._caused_by(rule.rule_id):
                then = self._call(rule.action.tool, rule.action.args, depth + 1, args)
            if not then.ok:
                return then
        return outcome

    def _attempt(self, tool: str, args: dict[str, Any], depth: int) -> Outcome:
        """Step 2 of the module docstring: the call and the rules' reactions to it."""
        used: Counter[int] = Counter()
        cause = None  # the rule behind the next attempt; None for the first
        while True:
            with self._caused_by(cause):
                outcome = self._invoke(tool, args)
            index = self._reaction(tool, outcome, used) if depth < MAX_RULE_DEPTH else None
            if index is None:
                return outcome
            used[index] += 1
            rule = self.harness.rules[index]
            cause = rule.rule_id  # retry and call_first attempt the call again
            if rule.action.kind == "retry":
                if rule.action.backoff:
                    with self._caused_by(cause):
                        self._wait(rule.action.backoff)
                continue
            with self._caused_by(cause):
                other = self._call(rule.action.tool, rule.action.args, depth + 1, args)
            if rule.action.kind == "switch_tool" or not other.ok:
                return other

    def _reaction(self, tool: str, outcome: Outcome, used: Counter[int]) -> int | None:
        for index, rule in enumerate(self.harness.rules):
            trigger = rule.trigger
            if outcome.ok:
                hit = (trigger.kind == "on_result" and trigger.tool == tool
                       and outcome.result.get(trigger.field, _MISSING) == trigger.equals)
            else:
                hit = trigger.kind == "on_error" and trigger.code == outcome.code and trigger.tool in ("*", tool)
            if hit and used[index] < _action_budget(rule.action):
                return index
        return None

    def _paginate(self, tool: str, args: dict[str, Any], first: Outcome, max_pages: int, depth: int) -> Outcome:
        arg = paging_argument(TOOLS[tool].args)
        result, pages = dict(first.result), 1
        while result.get(PAGING[arg]) is not None and pages < max_pages:
            page = self._attempt(tool, {**args, arg: result[PAGING[arg]]}, depth)
            if not page.ok:
                return page
            lists = {k: result[k] + v for k, v in page.result.items() if isinstance(v, list) and k in result}
            result, pages = {**page.result, **lists}, pages + 1
        return Outcome(True, result)

    def _triggered(self, kind: str, tool: str):
        for rule in self.harness.rules:
            trigger = rule.trigger
            if trigger.kind == kind and trigger.tool == tool and (trigger.when is None or self._holds(trigger.when)):
                yield rule

    # -- backend, variables, records ---------------------------------------------------

    def _invoke(self, tool: str, args: dict[str, Any]) -> Outcome:
        self._guard()
        try:
            result = self.backend.call(tool, args)
        except ToolError as err:
            self._record("tool_call", tool, args, {"error": err.as_json()}, False)
            return Outcome(False, code=err.code)
        self._record("tool_call", tool, args, {"result": result}, True)
        return Outcome(True, result)

    def _wait(self, ticks: int) -> None:
        self._guard()
        self.backend.advance(ticks)
        self._record("wait", "wait", {"ticks": ticks}, {"result": {"clock": self.backend.clock}}, True)

    def _pick(self, pick: Pick) -> bool:
        self._guard()
        spec = {"from": pick.source, "where": dict(pick.where), "order_by": pick.order_by, "take": pick.take}
        try:
            items = self._variable(pick.source)
            where = {name: self._resolve(value) for name, value in pick.where}
        except Unbound as exc:
            self._record("pick", pick.source, spec, _agent_error("unbound_variable", str(exc)), False)
            return False
        if not isinstance(items, list):
            self._record("pick", pick.source, spec, _agent_error("not_a_list", f"${pick.source} is not a list"), False)
            return False
        found = [x for x in items if isinstance(x, dict) and all(_matches(x.get(f), v) for f, v in where.items())]
        if pick.order_by is not None:
            found.sort(key=lambda x: _sort_key(x.get(pick.order_by)))
        if not found:
            self._record("pick", pick.source, spec, _agent_error("no_match", f"no element of ${pick.source} matches"), False)
            return False
        chosen = found[0] if pick.take == "first" else found[-1]
        self._merge(chosen)
        self._record("pick", pick.source, spec, {"result": chosen}, True)
        return True

    def _bind(self, tool: str, explicit: Pairs, inherited: dict[str, Any]) -> dict[str, Any]:
        spec = TOOLS[tool]
        args = {name: value for name, value in inherited.items() if name in spec.args}
        args.update({name: self._resolve(value) for name, value in explicit})
        for name, arg in spec.args.items():
            if arg.required and name not in args and name in self.variables:
                args[name] = self.variables[name]
        return args

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, tuple):
            return {name: self._resolve(inner) for name, inner in value}
        if not isinstance(value, str):
            return value
        whole = VAR.fullmatch(value)
        if whole:
            return self._variable(whole.group(1))
        return VAR.sub(lambda m: str(self._variable(m.group(1))), value)

    def _variable(self, name: str) -> Any:
        if name not in self.variables:
            raise Unbound(f"${name} is not bound")
        return self.variables[name]

    def _holds(self, condition: Condition) -> bool:
        value = self.variables.get(condition.var, _MISSING)
        try:
            target = self._resolve(condition.value)
        except Unbound:
            return False
        if condition.op in ("equals", "not_equals"):
            return (value == target) == (condition.op == "equals")
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (value, target))
        if not numbers:
            return False
        return value >= target if condition.op == "gte" else value < target

    def _merge(self, fields: dict[str, Any]) -> None:
        self.variables.update({k: v for k, v in fields.items() if k != "stale"})

    def _guard(self) -> None:
        if len(self.steps) >= self.max_steps:
            raise StepLimitReached

    def _record(self, kind: str, name: str, args: dict[str, Any], result: dict[str, Any], ok: bool) -> None:
        self.steps.append({
            "step": len(self.steps), "kind": kind, "name": name,
            "args_json": json.dumps(args, sort_keys=True),
            "result_json": json.dumps({**result, "via": self._via}, sort_keys=True),
            "ok": ok, "reward": None, "logprob": None, "teacher_logprob": None,
        })


def _agent_error(code: str, message: str) -> dict[str, Any]:
    """An error the agent hit before reaching the backend (never injected)."""
    return {"error": {"code": code, "message": message, "injected": False}}
