"""Rule operators: each reads the evidence (``rule_evidence.py``) for one kind of gap and
returns candidate rules, with the cases that motivated them and a rationale that cites
the counts. ``rules.py`` ranks the candidates and applies one.

The operators and the evidence they need (Self-Healing Harness's "retry or switch tool
after error E, check a precondition before call X"):

- ``retry_on_error``: plans that ended on an *injected* error (a fault, not a refusal)
  that no rule retried.
- ``precondition``: a refusal (``precondition_failed`` ...) from a tool the goal still
  needs (an unmet condition names it): call another tool first, then the tool again.
  The tool to call first is, by strength of evidence, one that preceded the tool in
  successes of the template, one an unmet condition names, or a write tool on the same
  resource whose name the error message mentions.
- ``switch_tool``: a refusal from a write tool the goal does not need (call the tool an
  unmet condition names instead), or a miss from a read tool (call the catalogue's
  read tool whose name and description share the most words with it, on the same
  input).
- ``paginate``: a list whose ``next_page`` cursor was never followed in a failure.
- ``reread``: a completed plan that failed after a read served stale.
- ``follow_up``: a completed plan whose unmet condition names a tool it never called:
  call it after the tool whose result feeds it, under the condition on the agent's
  variables that separates these failures from the template's successes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from suites.toolsim.harness import Harness, Trigger
from suites.toolsim.tools import TOOLS
from tasks.proposers.rule_evidence import (
    Evidence,
    Trace,
    args_of,
    error_of,
    failure_point,
    is_call,
    overlap,
    resource_arg,
    stale_reads,
    tool_words,
    tools_named,
    unfollowed_cursors,
    variables_at,
    words,
)

INITIAL_RETRIES = 2
MAX_PAGES = 10


@dataclass(frozen=True)
class Candidate:
    """One possible edit. ``edit`` is "add_rule", "replace_rule", "remove_rule" or
    "put_skill"; ``index`` the rule replaced or removed; ``strength`` how direct the
    evidence is (it breaks ties of ``support``, the number of motivating cases)."""

    operator: str
    edit: str
    item: dict[str, Any]
    support: int
    strength: int
    triggers: tuple[str, ...]
    rationale: str
    index: int | None = None

    @classmethod
    def of(cls, operator: str, edit: str, item: dict[str, Any], traces: list[Trace], strength: int,
           rationale: str, index: int | None = None) -> "Candidate":
        """A candidate motivated by ``traces``: they are its triggers and its support."""
        ids = case_ids(traces)
        return cls(operator, edit, item, len(ids), strength, ids, rationale, index)


def case_ids(traces: list[Trace]) -> tuple[str, ...]:
    return tuple(sorted({t.case_id for t in traces}))


def share(traces: list[Trace], evidence: Evidence) -> str:
    """"6 of 8 failures on refund_unshipped_order" (or a per-template list)."""
    by_template = Counter(t.template for t in {t.case_id: t for t in traces}.values())
    parts = [f"{n} of {len({f.case_id for f in evidence.failures_of(name)})} failures on {name}"
             for name, n in sorted(by_template.items(), key=lambda kv: (-kv[1], kv[0]))]
    return ", ".join(parts)


def covered(harness: Harness, kind: str, tool: str, code: str | None = None, action: str | None = None) -> bool:
    """Whether a rule of the harness already reacts to this trigger (with this action
    kind, when given): then the evidence is the revision's, not a new rule's."""
    for rule in harness.rules:
        trigger: Trigger = rule.trigger
        if trigger.kind != kind or trigger.code != code or action not in (None, rule.action.kind):
            continue
        if trigger.tool == tool or (kind == "on_error" and trigger.tool == "*"):
            return True
    return False


def ended_on(trace: Trace) -> tuple[str, dict[str, Any]] | None:
    """(tool, error) of the failed call that ended the plan, if a call did."""
    index = failure_point(trace)
    if index is None or not is_call(trace.steps[index]):
        return None
    error = error_of(trace.steps[index])
    return (trace.steps[index]["name"], error) if error else None


def retry_on_error(evidence: Evidence, harness: Harness) -> list[Candidate]:
    """A fault ended the plan: retry that error code, for every tool when it hit several
    (faults strike any tool alike), else for the one it hit."""
    groups: dict[str, list[tuple[str, Trace]]] = defaultdict(list)
    for trace in evidence.failures:
        ended = ended_on(trace)
        if ended and ended[1].get("injected") and not covered(harness, "on_error", ended[0], ended[1]["code"]):
            groups[ended[1]["code"]].append((ended[0], trace))
    candidates = []
    for code, hits in sorted(groups.items()):
        tools = Counter(tool for tool, _ in hits)
        traces = [t for _, t in hits]
        target = "*" if len(tools) > 1 else next(iter(tools))
        listed = ", ".join(f"{tool} x{n}" for tool, n in tools.most_common())
        rule = {"id": f"retry-{code}", "trigger": {"on_error": code, "tool": target},
                "action": {"retry": {"max": INITIAL_RETRIES}}}
        rationale = (f"{share(traces, evidence)} ended on an injected {code} ({listed}) that no rule retried; "
                     f"proposing retry max {INITIAL_RETRIES} on {code} for {'any tool' if target == '*' else target}")
        candidates.append(Candidate.of("retry_on_error", "add_rule", rule, traces, 2, rationale))
    return candidates


def refusals(evidence: Evidence, harness: Harness) -> dict[tuple[str, str], list[Trace]]:
    """Failures that ended on a non-injected error, by (tool, code), skipping those a
    rule already reacts to."""
    groups: dict[tuple[str, str], list[Trace]] = defaultdict(list)
    for trace in evidence.failures:
        ended = ended_on(trace)
        if ended and not ended[1].get("injected") and not covered(harness, "on_error", ended[0], ended[1]["code"]):
            groups[(ended[0], ended[1]["code"])].append(trace)
    return groups


def _last_call(trace: Trace) -> tuple[dict[str, Any], dict[str, Any]]:
    """(arguments of the failed final call, variables before it)."""
    index = failure_point(trace)
    return args_of(trace.steps[index]), variables_at(trace, index)


def missing_args(tool: str, available: set[str]) -> list[str]:
    return [name for name, arg in TOOLS[tool].args.items() if arg.required and name not in available]


def _needs(trace: Trace, tool: str) -> bool:
    return any(tool in tools_named(condition) for condition in trace.unmet)


def _preceded_in_successes(evidence: Evidence, template: str, tool: str, failing: list[Trace]) -> Counter[str]:
    """Tools a success of the template called before ``tool`` that no failure did."""
    def before(trace: Trace) -> set[str]:
        first = next((i for i, s in enumerate(trace.steps) if is_call(s, tool) and s["ok"]), len(trace.steps))
        return {s["name"] for s in trace.steps[:first] if is_call(s) and s["ok"]}

    seen_in_failures = set().union(*(before(t) for t in failing)) if failing else set()
    counts: Counter[str] = Counter()
    for trace in evidence.successes:
        if trace.template == template and any(is_call(s, tool) and s["ok"] for s in trace.steps):
            counts.update(before(trace) - seen_in_failures - {tool})
    return counts


def _first_tools(evidence: Evidence, tool: str, traces: list[Trace]) -> dict[str, tuple[int, str]]:
    """Tools to call before ``tool``, each with (strength, why), strongest source kept."""
    found: dict[str, tuple[int, str]] = {}
    for template in sorted({t.template for t in traces}):
        mine = [t for t in traces if t.template == template]
        for other, n in sorted(_preceded_in_successes(evidence, template, tool, mine).items()):
            found[other] = max(found.get(other, (0, "")), (3, f"it preceded {tool} in {n} successes of {template}"))
    for condition in sorted({c for t in traces for c in t.unmet}):
        for other in tools_named(condition):
            if other != tool:
                found.setdefault(other, (2, f"the unmet goal {condition!r} names it"))
    message = set().union(*(words(error_of(t.steps[failure_point(t)])["message"]) for t in traces))
    for other in sorted(TOOLS):
        if other != tool and not TOOLS[other].read and resource_arg(other) == resource_arg(tool):
            if overlap(tool_words(other) - tool_words(tool), message):
                found.setdefault(other, (1, f"it acts on the same {resource_arg(tool)} and the error mentions it"))
    return found


def precondition(evidence: Evidence, tool: str, code: str, traces: list[Trace]) -> list[Candidate]:
    needed = [t for t in traces if _needs(t, tool)]
    if not needed:
        return []
    candidates = []
    for other, (strength, why) in sorted(_first_tools(evidence, tool, needed).items()):
        args, variables = _last_call(needed[0])
        if missing_args(other, set(args) | set(variables)):
            continue
        rule = {"id": f"{other}-before-{tool}", "trigger": {"on_error": code, "tool": tool},
                "action": {"call_first": {"tool": other}}}
        rationale = (f"{share(needed, evidence)} hit {code} from {tool}, which the goal still needs; "
                     f"proposing call_first {other} before retrying {tool} ({why})")
        candidates.append(Candidate.of("precondition", "add_rule", rule, needed, strength, rationale))
    return candidates


def _explicit_args(tool: str, inherited: set[str], variables: set[str], text: str) -> dict[str, Any] | None:
    """Arguments a rule must pass to ``tool``: ``text`` for required strings nothing
    binds, ``$name`` for optional ones the agent knows; None when a required one stays
    unbound."""
    args: dict[str, Any] = {}
    for name, arg in TOOLS[tool].args.items():
        if name in inherited or (arg.required and name in variables):
            continue
        if not arg.required and name in variables:
            args[name] = f"${name}"
        elif arg.required and arg.kind == "str" and not name.endswith("_id"):
            args[name] = text  # free text (a subject, a reason); identifiers come from results
        elif arg.required:
            return None
    return args


def _switch_rule(tool: str, code: str, other: str, args: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": other, **({"args": args} if args else {})}
    return {"id": f"{other}-instead-of-{tool}", "trigger": {"on_error": code, "tool": tool},
            "action": {"switch_tool": body}}


def goal_switch(evidence: Evidence, tool: str, code: str, traces: list[Trace]) -> list[Candidate]:
    """A write the goal does not need failed: do what the unmet condition names instead."""
    spare = [t for t in traces if not _needs(t, tool) and t.unmet]
    candidates = []
    for condition in sorted({c for t in spare for c in t.unmet}):
        motivated = [t for t in spare if condition in t.unmet]
        args, variables = _last_call(motivated[0])
        for other in tools_named(condition):
            explicit = _explicit_args(other, set(args), set(variables), condition.replace("_", " "))
            if other == tool or explicit is None:
                continue
            rationale = (f"{share(motivated, evidence)} hit {code} from {tool} while the unmet goal "
                         f"{condition!r} names {other}, never called; proposing switch_tool {other} on that error")
            rule = _switch_rule(tool, code, other, explicit)
            candidates.append(Candidate.of("switch_tool", "add_rule", rule, motivated, 2, rationale))
    return candidates


def lookup_switch(evidence: Evidence, tool: str, code: str, traces: list[Trace]) -> list[Candidate]:
    """A read missed: try the catalogue's read tools that resemble it, on the same input."""
    args, variables = _last_call(traces[0])
    sources = [name for name, value in sorted(args.items())
               if variables.get(name) == value and name in traces[0].request]
    mine = words(tool.replace("_", " ") + " " + TOOLS[tool].doc)
    candidates = []
    for other in sorted(TOOLS):
        similarity = overlap(mine, words(other.replace("_", " ") + " " + TOOLS[other].doc))
        if other == tool or not TOOLS[other].read or not similarity or not sources:
            continue
        unbound = missing_args(other, set(args) | set(variables))
        explicit = {name: f"${sources[0]}" for name in unbound if TOOLS[other].args[name].kind == "str"}
        if len(explicit) != len(unbound):
            continue
        rationale = (f"{share(traces, evidence)} hit {code} from {tool}; proposing switch_tool {other} "
                     f"with ${sources[0]} ({similarity} words of its description match {tool}'s)")
        rule = _switch_rule(tool, code, other, explicit)
        candidates.append(Candidate.of("switch_tool", "add_rule", rule, traces, similarity, rationale))
    return candidates


def on_refusal(evidence: Evidence, harness: Harness) -> list[Candidate]:
    """A tool refused (a non-injected error ended the plan): a missed read calls for
    another lookup, a refused write for a precondition or for another write."""
    candidates = []
    for (tool, code), traces in sorted(refusals(evidence, harness).items()):
        if TOOLS[tool].read:
            candidates += lookup_switch(evidence, tool, code, traces)
        else:
            candidates += precondition(evidence, tool, code, traces) + goal_switch(evidence, tool, code, traces)
    return candidates


def paginate(evidence: Evidence, harness: Harness) -> list[Candidate]:
    """A failure read part of a paged list: read every page of that tool."""
    groups: dict[str, list[Trace]] = defaultdict(list)
    for trace in evidence.failures:
        for tool in unfollowed_cursors(trace):
            if "page" in TOOLS[tool].args and not covered(harness, "before", tool, action="paginate"):
                groups[tool].append(trace)
    candidates = []
    for tool, traces in sorted(groups.items()):
        rule = {"id": f"paginate-{tool}", "trigger": {"before": tool}, "action": {"paginate": {"max_pages": MAX_PAGES}}}
        rationale = (f"{share(traces, evidence)} read {tool} and left its next_page cursor unfollowed; "
                     f"proposing paginate before {tool} (up to {MAX_PAGES} pages)")
        candidates.append(Candidate.of("paginate", "add_rule", rule, traces, 2, rationale))
    return candidates


def reread(evidence: Evidence, harness: Harness) -> list[Candidate]:
    """Stale reads that show up in completed failures more often than in successes."""
    failing: dict[str, list[Trace]] = defaultdict(list)
    for trace in evidence.failures:
        if failure_point(trace) is None:
            for tool in stale_reads(trace):
                failing[tool].append(trace)
    harmless = Counter(tool for trace in evidence.successes for tool in stale_reads(trace))
    candidates = []
    for tool, traces in sorted(failing.items()):
        if len(traces) <= harmless[tool] or covered(harness, "on_result", tool):
            continue
        rule = {"id": f"reread-stale-{tool}", "trigger": {"on_result": tool, "field": "stale", "equals": True},
                "action": {"retry": {"max": 1}}}
        rationale = (f"{share(traces, evidence)} completed after a stale read from {tool} "
                     f"(stale in {harmless[tool]} successes); proposing a re-read when {tool} answers stale")
        candidates.append(Candidate.of("reread", "add_rule", rule, traces, 1, rationale))
    return candidates


def _feeder(trace: Trace, tool: str) -> int | None:
    """Index of the last successful call whose result binds what ``tool`` still misses."""
    for index in range(len(trace.steps) - 1, -1, -1):
        step = trace.steps[index]
        if is_call(step) and step["ok"]:
            known = set(variables_at(trace, index + 1)) | set(args_of(step))
            if not missing_args(tool, known) and missing_args(tool, set(variables_at(trace, index))):
                return index
    return None


def separating_condition(evidence: Evidence, template: str, feeder: str, after: list[dict[str, Any]]) -> dict | None:
    """A variable equal to one scalar after ``feeder`` in every failure and never in a
    success of the template (Designer-RSI's contrast of successes and failures)."""
    contrast = []
    for trace in evidence.successes:
        index = next((i for i, s in enumerate(trace.steps) if is_call(s, feeder) and s["ok"]), None)
        if trace.template == template and index is not None:
            contrast.append(variables_at(trace, index + 1))
    found = []
    for name in sorted(set.intersection(*(set(v) for v in after))):
        value = after[0][name]
        if not contrast or not isinstance(value, (str, int, bool)) or any(v[name] != value for v in after):
            continue
        if all(v.get(name) != value for v in contrast):
            found.append((len({repr(v.get(name)) for v in contrast}), name, value))
    if not found:
        return None
    _, name, value = min(found)  # a category (few values in successes), not an identifier
    return {"var": name, "equals": value}


def follow_up(evidence: Evidence, harness: Harness) -> list[Candidate]:
    """A completed plan missed a goal that a tool it never called would meet: call that
    tool after the call whose result supplies its arguments."""
    groups: dict[tuple[str, str, str], list[tuple[Trace, int]]] = defaultdict(list)
    for trace in evidence.failures:
        if failure_point(trace) is not None:
            continue
        called = {s["name"] for s in trace.steps if is_call(s) and s["ok"]}
        for condition in trace.unmet:
            for tool in tools_named(condition):
                index = _feeder(trace, tool) if tool not in called else None
                if index is not None and not covered(harness, "after", trace.steps[index]["name"]):
                    groups[(trace.template, tool, trace.steps[index]["name"])].append((trace, index))
    candidates = []
    for (template, tool, feeder), hits in sorted(groups.items()):
        traces = [t for t, _ in hits]
        when = separating_condition(evidence, template, feeder, [variables_at(t, i + 1) for t, i in hits])
        trigger = {"after": feeder, **({"when": when} if when else {})}
        rule = {"id": f"{tool}-after-{feeder}", "trigger": trigger, "action": {"then_call": {"tool": tool}}}
        guard = f" when {when['var']} is {when['equals']!r} (never so in its successes)" if when else ""
        rationale = (f"{share(traces, evidence)} completed without {tool}, which an unmet goal names; "
                     f"proposing then_call {tool} after {feeder}{guard}")
        candidates.append(Candidate.of("follow_up", "add_rule", rule, traces, 2, rationale))
    return candidates


RULE_OPERATORS = (retry_on_error, on_refusal, paginate, reread, follow_up)
