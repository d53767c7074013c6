"""How memory is handed to a role (pure): each selected unit set is rendered in one of
three forms, and the forms change what the toolsim agent does:

- ``guideline``: a soft preference. The unit's rule runs with a weak budget (a retry at
  most once, paging at most 3 pages); a skill runs without its checks or retries.
- ``checklist``: the unit as mined plus mandatory checks: the request's plan (the skill,
  else the template's default plan) is re-run once when a step or check fails, and a
  skill keeps its checks.
- ``constraint``: a hard action filter. The rule fires on every call it can match (an
  ``on_error`` rule on every tool, a ``before``/``after`` rule without its condition)
  with a strong budget (up to 4 retries, 20 pages).

``harness_for`` merges every role's rendering into the one harness the episode runs with,
rules in role order (intake, lookup, action, verify). Deviation: the paper renders units
as text for LLM agents; here the rendering is a harness transformation, so the three
forms are behaviourally different by construction.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping, Sequence

from suites.toolsim.templates import get_template
from tasks.loops.mace.memory import EMPTY_HARNESS, ROLES, Unit

FORMS = ("guideline", "checklist", "constraint")
NONE = "none"
"""The form of an empty injection."""


def _budgeted(action: dict[str, Any], retry_max: int, pages: int, harden: bool) -> dict[str, Any]:
    if "retry" in action:
        retry = dict(action["retry"])
        retry["max"] = max(retry["max"], retry_max) if harden else min(retry["max"], retry_max)
        return {**action, "retry": retry}
    if "paginate" in action:
        wanted = action["paginate"].get("max_pages", 10)
        return {**action, "paginate": {"max_pages": max(wanted, pages) if harden else min(wanted, pages)}}
    return action


def render_rule(rule: Mapping[str, Any], form: str) -> dict[str, Any]:
    """A unit's rule in ``form`` (module docstring)."""
    rule = copy.deepcopy(dict(rule))
    if form == "guideline":
        rule["action"] = _budgeted(rule["action"], 1, 3, harden=False)
    elif form == "constraint":
        trigger = {k: v for k, v in rule["trigger"].items() if k != "when"}
        if "on_error" in trigger:
            trigger["tool"] = "*"
        rule["trigger"], rule["action"] = trigger, _budgeted(rule["action"], 4, 20, harden=True)
    return rule


def render_skill(skill: Mapping[str, Any], form: str) -> dict[str, Any]:
    skill = copy.deepcopy(dict(skill))
    if form == "guideline":
        skill.pop("checks", None)
        skill["retries"] = 0
    elif form == "checklist":
        skill["retries"] = max(1, skill.get("retries", 0))
    return skill


def harness_for(injections: Sequence[tuple[str, Sequence[Unit], str]], template: str) -> dict[str, Any]:
    """The episode's harness from ``(role, units, form)`` injections (module docstring)."""
    order = {role: i for i, role in enumerate(ROLES)}
    rules, skill, checklist = [], None, False
    for role, units, form in sorted(injections, key=lambda inj: order[inj[0]]):
        checklist = checklist or (form == "checklist" and bool(units))
        for unit in units:
            if unit.kind == "rule":
                rules.append(render_rule(unit.item, form))
            elif unit.item["trigger"]["template"] == template and skill is None:
                skill = render_skill(unit.item, form)
    if checklist and skill is None:
        skill = {"name": f"checklist-{template}", "trigger": {"template": template},
                 "steps": copy.deepcopy(list(get_template(template).plan)), "retries": 1}
    elif checklist:
        skill["retries"] = max(1, skill.get("retries", 0))
    return {**EMPTY_HARNESS, "rules": rules, "skills": [skill] if skill else []}
