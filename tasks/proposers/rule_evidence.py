"""Trace evidence for the rule proposer (``rules.py``): what one toolsim episode left
behind, and the pure readers that turn its trajectory into facts a rule can be built on.

A ``Trace`` is one case's trajectory (the step dicts ``suites.toolsim.agent`` records)
with the case's template, the customer's request and the goal outcome: which goal
conditions were not met and which guards broke. The readers answer the questions the
operators ask: where did the attempt end and on which error; what did the agent know
(its variables) at a step; which list cursor was never followed; which request
parameter was never used; how long after a rate-limited call did a retry come.

Conditions name what a template needed done ("order_cancelled", "backorder_ticket"),
and ``tools_named`` maps such a name to the write tools whose names share a word with
it (``cancel_order``, ``create_ticket``): that is how a missing goal becomes a tool to
call without any table of template-specific fixes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from suites.toolsim.tools import TOOLS

if TYPE_CHECKING:
    from tasks.proposers.rules import RuleProposal

NO_TICK_CODES = ("invalid_argument", "unknown_tool", "unbound_variable")
"""Errors raised before the backend's clock moves (``backend.py``): no time passes."""
MIN_STEM = 4
WORD = re.compile(r"[a-z]+")
STOPWORDS = frozenset({"the", "this", "that", "with", "and", "for", "are", "not", "its", "whose", "equals", "one"})


@dataclass(frozen=True)
class Trace:
    """One episode as evidence. ``steps`` are the agent's step dicts; ``request`` the
    customer's parameters (the agent's starting variables)."""

    case_id: str
    template: str
    steps: tuple[Mapping[str, Any], ...]
    success: bool
    request: Mapping[str, Any] = field(default_factory=dict)
    unmet: tuple[str, ...] = ()
    """Goal conditions not met: the progress the episode is missing."""
    broken: tuple[str, ...] = ()
    """Guard conditions broken: harm the episode did."""
    progress: float = 0.0


@dataclass(frozen=True)
class Trial:
    """A proposal the gate rejected and the traces of its replay: the evidence that lets
    a rejected rule be revised rather than forgotten (Designer-RSI keeps the gap record
    of a rejected skill)."""

    proposal: "RuleProposal"
    traces: tuple[Trace, ...]


@dataclass(frozen=True)
class Evidence:
    """Everything the proposer reads: traces under the current harness, split by
    outcome, and the rejected proposals with their replays."""

    failures: tuple[Trace, ...]
    successes: tuple[Trace, ...] = ()
    rejected: tuple[Trial, ...] = ()

    @classmethod
    def of(cls, traces: Sequence[Trace], rejected: Sequence[Trial] = ()) -> "Evidence":
        return cls(tuple(t for t in traces if not t.success), tuple(t for t in traces if t.success), tuple(rejected))

    def failures_of(self, template: str) -> list[Trace]:
        return [t for t in self.failures if t.template == template]


def trace_of(case_id: str, payload: Mapping[str, Any], episode: Any) -> Trace:
    """A ``suites.toolsim.episode.Episode`` of the case with ``payload`` as evidence."""
    conditions = episode.evaluation.conditions
    return Trace(
        case_id=case_id,
        template=episode.template,
        steps=tuple(episode.steps),
        success=bool(episode.evaluation.success),
        request=dict(payload["params"]),
        unmet=tuple(c.name for c in conditions if not c.met and not c.guard),
        broken=tuple(c.name for c in conditions if not c.met and c.guard),
        progress=float(episode.evaluation.progress),
    )


# -- one step ------------------------------------------------------------------------


def args_of(step: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(step["args_json"] or "{}")


def payload_of(step: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(step["result_json"] or "{}")


def result_of(step: Mapping[str, Any]) -> dict[str, Any]:
    return payload_of(step).get("result") or {}


def error_of(step: Mapping[str, Any]) -> dict[str, Any] | None:
    return payload_of(step).get("error")


def via_of(step: Mapping[str, Any]) -> str:
    return payload_of(step).get("via", "")


def is_call(step: Mapping[str, Any], tool: str | None = None) -> bool:
    return step["kind"] == "tool_call" and (tool is None or step["name"] == tool)


def ticks(step: Mapping[str, Any]) -> int:
    """Clock ticks the step took: 1 per call that reached the backend, a wait's length."""
    if step["kind"] == "wait":
        return int(args_of(step).get("ticks", 0))
    if step["kind"] != "tool_call":
        return 0
    error = error_of(step)
    return 0 if error is not None and error["code"] in NO_TICK_CODES else 1


# -- one trace -----------------------------------------------------------------------


def failure_point(trace: Trace) -> int | None:
    """Index of the failed step that ended the plan, or None when the plan completed
    (the failure is then in the goal, not in a step). A failed step ends the attempt
    at once (``agent.py``), after the rules had their say, so it is the last step."""
    if trace.steps and not trace.steps[-1]["ok"]:
        return len(trace.steps) - 1
    return None


def variables_at(trace: Trace, index: int) -> dict[str, Any]:
    """The agent's variables just before step ``index``: the request, then every
    successful call's and pick's result merged in order (as ``agent.py`` does)."""
    variables = dict(trace.request)
    for step in trace.steps[:index]:
        if step["ok"] and step["kind"] in ("tool_call", "pick"):
            variables.update({k: v for k, v in result_of(step).items() if k != "stale"})
    return variables


def unfollowed_cursors(trace: Trace) -> list[str]:
    """Tools whose successful result pointed at a ``next_page`` that no later call of the
    same tool asked for: a list the agent read only in part."""
    tools = []
    for index, step in enumerate(trace.steps):
        cursor = result_of(step).get("next_page") if is_call(step) and step["ok"] else None
        if cursor is None or step["name"] in tools:
            continue
        later = trace.steps[index + 1:]
        if not any(is_call(s, step["name"]) and args_of(s).get("page") == cursor for s in later):
            tools.append(step["name"])
    return tools


def stale_reads(trace: Trace) -> list[str]:
    """Tools whose successful read was served by the lagging replica."""
    return sorted({s["name"] for s in trace.steps if is_call(s) and s["ok"] and result_of(s).get("stale")})


def used_values(trace: Trace) -> str:
    """Every argument and pick spec of the trace as one text, to test a value's use."""
    return "\n".join(s["args_json"] or "" for s in trace.steps)


def unused_params(trace: Trace) -> list[str]:
    """Request parameters whose value no step passed on (neither as the value nor as a
    ``$name`` reference): information the customer gave that the plan ignored."""
    text = used_values(trace)
    unused = []
    for name, value in sorted(trace.request.items()):
        if f"${name}" in text or json.dumps(value, sort_keys=True) in text:
            continue
        unused.append(name)
    return unused


def retry_chains(trace: Trace, rule_id: str, code: str) -> list[tuple[bool, int]]:
    """For each call that failed with ``code`` and was retried by rule ``rule_id``:
    (whether the retries ended in the same error, the largest clock offset, counted from
    the end of the first failed call, at which a retry still failed). A retry that keeps
    failing at offsets 0 and 1 says the error outlasts 1 tick."""
    chains = []
    steps = trace.steps
    for index, first in enumerate(steps):
        error = error_of(first) if is_call(first) else None
        if error is None or error["code"] != code or via_of(first) == rule_id:
            continue
        elapsed, worst, still_failing, seen = 0, -1, True, False
        for step in steps[index + 1:]:
            if via_of(step) != rule_id or step["kind"] not in ("wait", "tool_call"):
                break
            if is_call(step, first["name"]):
                seen = True
                again = error_of(step)
                still_failing = again is not None and again["code"] == code
                if still_failing:
                    worst = elapsed
            elapsed += ticks(step)
        if seen:
            chains.append((still_failing, worst))
    return chains


# -- words ---------------------------------------------------------------------------


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) >= 3 and w not in STOPWORDS}


def stems_match(a: str, b: str) -> bool:
    """"cancelled" ~ "cancel", "orders" ~ "order": one word starts the other."""
    return min(len(a), len(b)) >= MIN_STEM and (a.startswith(b) or b.startswith(a))


def overlap(first: set[str], second: set[str]) -> int:
    return sum(any(stems_match(a, b) for b in second) for a in first)


def tool_words(tool: str) -> set[str]:
    return set(tool.split("_"))


def write_tools() -> list[str]:
    return sorted(name for name, spec in TOOLS.items() if not spec.read)


def tools_named(condition: str) -> list[str]:
    """Write tools whose name shares the most words with a condition name ("order_cancelled"
    -> ["cancel_order"]): only writes can make a missing goal come true."""
    scored = {tool: overlap(set(condition.split("_")), tool_words(tool)) for tool in write_tools()}
    best = max(scored.values())
    return sorted(t for t, s in scored.items() if s == best) if best else []


def resource_arg(tool: str) -> str:
    return TOOLS[tool].resource
