"""ModularRSI's harness wrapper: a toolsim harness document read as five modules, each
owning the items (rules, skills) of its scope, so a module evolves alone and the five
versions merge back into one document.

    tool_wrapper   retrying tool wrapper: on_error ``retry`` / ``switch_tool`` rules
    observation    observation parser/truncator: ``paginate`` and on_result (stale) ``retry``
    context        context window: ``call_first`` rules (fetch what the call needs first)
    step_loop      step loop: skills (the plan a template runs, its re-runs)
    completion     completion detector: ``then_call`` rules (finish what the goal needs)

toolsim has no truncation length nor context-window size knob; this wrapper keeps those
modules to the rule kinds toolsim does have (said in the README) and leaves toolsim
unchanged. Pure; no I/O.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Mapping

from schemas.ids import content_id

MODULES = ("tool_wrapper", "observation", "context", "step_loop", "completion")

Item = Mapping[str, Any]


def module_of(edit: str, item: Item) -> str:
    """The module whose scope an item (a rule, or a skill when ``edit`` is put_skill) is in."""
    if edit == "put_skill" or "steps" in item:
        return "step_loop"
    action = next(iter(item["action"]))
    trigger = item["trigger"]
    if action == "paginate" or (action == "retry" and "on_result" in trigger):
        return "observation"
    if action == "call_first":
        return "context"
    if action == "then_call":
        return "completion"
    return "tool_wrapper"  # retry / switch_tool on an error


def split_modules(document: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """The document's items by module, each list in document order (rules, then skills)."""
    out: dict[str, list[dict[str, Any]]] = {m: [] for m in MODULES}
    for rule in document.get("rules", []):
        out[module_of("add_rule", rule)].append(copy.deepcopy(dict(rule)))
    for skill in document.get("skills", []):
        out["step_loop"].append(copy.deepcopy(dict(skill)))
    return out


def join_modules(modules: Mapping[str, list[Item]], version: int = 1) -> dict[str, Any]:
    """The toolsim document of module item lists: rules in module order, then skills."""
    rules = [copy.deepcopy(dict(i)) for m in MODULES for i in modules.get(m, []) if "steps" not in i]
    skills = [copy.deepcopy(dict(i)) for i in modules.get("step_loop", []) if "steps" in i]
    return {"version": version, "rules": rules, "skills": skills}


def body(item: Item) -> str:
    """An item's behaviour as text: ids, names and notes left out."""
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "name", "note")}, sort_keys=True)


def module_diff(base: Mapping[str, Any], edited: Mapping[str, Any]) -> dict[str, dict[str, list[dict]]]:
    """Per module whose items changed: the items ``added`` and ``removed`` (by behaviour)."""
    old, new = split_modules(base), split_modules(edited)
    out = {}
    for module in MODULES:
        old_bodies, new_bodies = [body(i) for i in old[module]], [body(i) for i in new[module]]
        added = [i for i in new[module] if body(i) not in old_bodies]
        removed = [i for i in old[module] if body(i) not in new_bodies]
        if added or removed:
            out[module] = {"added": added, "removed": removed}
    return out


def diff_text(diff: Mapping[str, Any]) -> str:
    return json.dumps(diff, sort_keys=True)


def version_id(modules: Mapping[str, list[Item]] | Mapping[str, Any]) -> str:
    """Content id (sha256) of a harness document or a module's item list."""
    return content_id(json.dumps(modules, sort_keys=True))
