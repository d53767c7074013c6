"""Skill operators: template-local procedures, for gaps no shared rule closes.

- ``gap_skill`` (Designer-RSI's *expand*): a request parameter the plan never used, in
  completed failures of a template, whose value names one element of a list the plan
  did read (the damaged product's name among the order's items). The skill is the
  template's current plan with a pick of that element inserted after the read, and the
  element's fields passed to later calls as the optional arguments they fill. The gap
  pool admits a skill only after ``GAP_THRESHOLD`` occurrences of the same gap.
- ``extract_skill``: a successful trajectory of a template whose procedure differs from
  the current plan (e.g. recorded under a rejected harness whose rule helped here and
  hurt elsewhere): its successful calls and picks, with arguments turned back into
  ``$variables``, become the template's skill. Steps caused by rules of the current
  harness are left out, since those rules fire again under the skill.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Mapping

from suites.toolsim.templates import get_template
from suites.toolsim.tools import TOOLS
from tasks.proposers.rule_evidence import (
    Evidence,
    Trace,
    args_of,
    failure_point,
    is_call,
    result_of,
    unused_params,
    variables_at,
    via_of,
)
from tasks.proposers.rule_operators import Candidate, case_ids, share

GAP_THRESHOLD = 3
"""Occurrences of one gap before a skill is written for it (Designer-RSI's gap pool)."""
MIN_TEXT = 4
"""Shorter variable values are not looked for inside texts (too many chance matches)."""


def rule_ids(document: Mapping[str, Any]) -> set[str]:
    """Rule ids as the parser names them (``rules[i]`` when a rule has none)."""
    return {rule.get("id", f"rules[{i}]") for i, rule in enumerate(document.get("rules", []))}


def current_skill(document: Mapping[str, Any], template: str) -> dict[str, Any]:
    """The template's skill in the document, or its default plan as a skill document."""
    for skill in document.get("skills", []):
        if skill["trigger"]["template"] == template:
            return copy.deepcopy(skill)
    return {"name": f"{template}-plan", "trigger": {"template": template},
            "steps": copy.deepcopy(list(get_template(template).plan))}


def _holder(trace: Trace, value: Any) -> tuple[str, str, str, dict[str, Any]] | None:
    """(tool, list field, element field, element) of the first read whose result lists
    an element with a field equal to ``value``."""
    for step in trace.steps:
        if not (is_call(step) and step["ok"]):
            continue
        for name, items in sorted(result_of(step).items()):
            for item in items if isinstance(items, list) else ():
                fields = sorted(item.items()) if isinstance(item, dict) else ()
                match = next((f for f, v in fields if v == value), None)
                if match is not None:
                    return step["name"], name, match, item
    return None


def _gap_steps(steps: list[dict[str, Any]], tool: str, source: str, field: str, param: str,
               element: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """``steps`` with the pick inserted after the first call of ``tool`` and the picked
    element's fields passed to later calls' optional arguments; None when the plan
    never calls ``tool`` itself or already picks that way."""
    at = next((i for i, s in enumerate(steps) if s.get("call") == tool), None)
    if at is None or any(s.get("pick", {}).get("from") == source for s in steps[at + 1:]):
        return None
    edited = steps[: at + 1] + [{"pick": {"from": source, "where": {field: f"${param}"}}}]
    for step in steps[at + 1:]:
        step = copy.deepcopy(step)
        if "call" in step:
            spec = TOOLS[step["call"]].args
            extra = {n: f"${n}" for n in sorted(element) if n in spec and not spec[n].required
                     and n not in step.get("args", {})}
            if extra:
                step["args"] = {**step.get("args", {}), **extra}
        edited.append(step)
    return edited


def gap_skill(evidence: Evidence, document: Mapping[str, Any]) -> list[Candidate]:
    """Skills for request parameters the plan ignored (see the module docstring)."""
    pool: dict[tuple[str, str, str, str, str], list[Trace]] = defaultdict(list)
    elements: dict[tuple[str, str, str, str, str], dict[str, Any]] = {}
    for trace in evidence.failures:
        if failure_point(trace) is not None:
            continue
        for param in unused_params(trace):
            held = _holder(trace, trace.request[param])
            if held is not None:
                key = (trace.template, param, held[0], held[1], held[2])
                pool[key].append(trace)
                elements.setdefault(key, held[3])
    candidates = []
    for key, traces in sorted(pool.items()):
        template, param, tool, source, field = key
        if len(case_ids(traces)) < GAP_THRESHOLD:
            continue
        skill = current_skill(document, template)
        steps = _gap_steps(skill["steps"], tool, source, field, param, elements[key])
        if steps is None:
            continue
        skill.update(name=f"{template}-by-{param}", steps=steps,
                     note=f"picks the {source} element whose {field} is ${param}")
        rationale = (f"{share(traces, evidence)} completed without using the request's {param}, which matched "
                     f"{source}[].{field} in {tool}'s result (gap seen {len(case_ids(traces))} times, threshold "
                     f"{GAP_THRESHOLD}); proposing a skill that picks that element and passes its fields on")
        candidates.append(Candidate.of("gap_skill", "put_skill", skill, traces, 1, rationale))
    return candidates


def _text(value: str, variables: Mapping[str, Any], names: list[str]) -> str:
    """``value`` with the text of string variables (longest first) written as ``$name``:
    "Your order o0003 is shipped." -> "Your order $order_id is $status."."""
    texts = {}
    for name in names:
        held = variables.get(name)
        if isinstance(held, str) and len(held) >= MIN_TEXT and held not in texts:
            texts[held] = name
    for held in sorted(texts, key=len, reverse=True):
        value = value.replace(held, f"${texts[held]}")
    return value


def _parameterised(tool: str, args: Mapping[str, Any], variables: Mapping[str, Any],
                   request: Mapping[str, Any]) -> dict[str, Any]:
    """A call's arguments as a skill step writes them: required ones the agent binds by
    name are left out, values some variable holds become ``$name`` (inside text too),
    the rest stay as they were."""
    spec = TOOLS[tool].args
    written = {}
    for name, value in sorted(args.items()):
        if spec[name].required and variables.get(name) == value:
            continue
        names = list(request) + ([name] if name in variables else []) + sorted(variables)
        ref = next((n for n in names if n in variables and variables[n] == value), None)
        if ref is not None:
            written[name] = f"${ref}"
        else:
            written[name] = _text(value, variables, names) if isinstance(value, str) else value
    return written


def procedure(trace: Trace, rules: set[str]) -> list[dict[str, Any]]:
    """The successful calls and picks of a trajectory as skill steps. A call made by one
    of ``rules`` is left out (the rule makes it again), unless it is the successful
    re-attempt of a failed call of the plan (a retry's): that call is the plan's."""
    steps, failed = [], set()
    for index, step in enumerate(trace.steps):
        if step["kind"] not in ("tool_call", "pick"):
            continue
        if not step["ok"]:
            failed |= {step["name"]} if via_of(step) not in rules else set()
            continue
        if via_of(step) in rules and step["name"] not in failed:
            continue
        failed.discard(step["name"])
        if step["kind"] == "pick":
            spec = args_of(step)
            pick = {"from": spec["from"], "take": spec.get("take", "first")}
            pick.update({k: spec[k] for k in ("where", "order_by") if spec.get(k)})
            steps.append({"pick": pick})
            continue
        args = _parameterised(step["name"], args_of(step), variables_at(trace, index), trace.request)
        steps.append({"call": step["name"], **({"args": args} if args else {})})
    return steps


def _shape(steps: list[Mapping[str, Any]]) -> list[str]:
    """The procedure's outline: which tools are called and which lists are picked from."""
    return [s["call"] if "call" in s else f"pick {s['pick']['from']}" for s in steps]


def foreign(trace: Trace, document: Mapping[str, Any]) -> bool:
    """Whether some step was caused by a rule or skill the document does not have: the
    trace was recorded under another harness, so its procedure may be new."""
    known = rule_ids(document) | {s["name"] for s in document.get("skills", [])} | {f"default:{trace.template}"}
    return any(via_of(step) not in known for step in trace.steps)


def extract_skill(evidence: Evidence, document: Mapping[str, Any]) -> list[Candidate]:
    """Skills copied from successes recorded under another harness; of several, the
    shortest procedure (then the first case id) is kept."""
    sources = list(evidence.successes) + [t for trial in evidence.rejected for t in trial.traces if t.success]
    rules = rule_ids(document)
    candidates = []
    for template in sorted({t.template for t in evidence.failures}):
        failing = evidence.failures_of(template)
        plan = current_skill(document, template)
        options = []
        for trace in (t for t in sources if t.template == template and foreign(t, document)):
            steps = procedure(trace, rules)
            if steps and _shape(steps) != _shape(plan["steps"]):
                options.append((len(steps), trace.case_id, steps))
        if len(case_ids(failing)) < GAP_THRESHOLD or not options:
            continue
        length, source, steps = min(options, key=lambda option: (option[0], option[1]))
        plan.update(name=f"{template}-from-{source.replace('/', '-')}", steps=steps,
                    note=f"extracted from the successful trajectory of {source}")
        path = " -> ".join(_shape(steps))
        rationale = (f"{share(failing, evidence)} under the current plan, while {source} succeeded by "
                     f"{path}; proposing that procedure as the skill of {template}")
        candidates.append(Candidate.of("extract_skill", "put_skill", plan, failing, 0, rationale))
    return candidates


SKILL_OPERATORS = (gap_skill, extract_skill)
