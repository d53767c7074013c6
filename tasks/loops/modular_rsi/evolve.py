"""ModularRSI's modifier, gate and integration. The modifier edits one module, from
the round's base version, with the module-scoped part of the rule proposer's catalogue;
the gate's three checks (interface, overfitting diff review, a run on two batch tasks);
integration merges the accepted module versions into one harness and records where
two modules' rules compete for the same trigger (the earlier module in ``MODULES``
wins, since toolsim applies the first matching rule; the later rule is dropped). Pure; no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from schemas.ids import content_id
from suites.toolsim.harness import HarnessError, parse_harness
from suites.toolsim.templates import TEMPLATES
from tasks.loops.modular_rsi.modules import (MODULES, body, diff_text, join_modules, module_diff, module_of,
                                             split_modules, version_id)
from tasks.proposers.rule_evidence import Evidence, Trace
from tasks.proposers.rule_operators import Candidate
from tasks.proposers.rules import RuleProposer, apply_candidate, edit_key, normalised

MIN_LITERAL = 4
"""Case values shorter than this (small counts, ``yes``) are too common to be a case's own."""


@dataclass(frozen=True)
class ModuleEdit:
    module: str
    base_ver: str
    document: dict[str, Any]
    diff: str
    key: str
    operator: str
    rationale: str

    @property
    def edit_id(self) -> str:
        return content_id(f"{self.module}\n{self.base_ver}\n{self.diff}")


def scope_of(candidate: Candidate, base: Mapping[str, Any]) -> str:
    """The module a catalogue edit touches (a replaced or removed rule: that rule's module)."""
    if candidate.edit == "remove_rule":
        return module_of("add_rule", normalised(base)["rules"][candidate.index])
    return module_of(candidate.edit, candidate.item)


def catalogue(traces: Sequence[Trace], base: Mapping[str, Any], module: str | None) -> list[Candidate]:
    """The proposer's edits the traces support, in its order, kept to ``module``'s scope
    (None: every scope, the non-modular ablation)."""
    found = RuleProposer().candidates(Evidence.of(traces), base)
    return [c for c in found if module is None or scope_of(c, base) == module]


def modify(traces: Sequence[Trace], base: Mapping[str, Any], module: str | None,
           rejected: Iterable[str] = ()) -> ModuleEdit | None:
    """The best edit of ``module`` (None: of any module) the traces support whose key was
    not rejected before, applied to ``base``; None when none is left."""
    skip = set(rejected)
    for candidate in catalogue(traces, base, module):
        if edit_key(candidate) in skip:
            continue
        edited, _ = apply_candidate(base, candidate)
        return ModuleEdit(module or scope_of(candidate, base), version(base), edited,
                          diff_text(module_diff(base, edited)), edit_key(candidate), candidate.operator,
                          candidate.rationale)
    return None


def version(document: Mapping[str, Any]) -> str:
    return version_id(dict(document))


def gate_static(edit: ModuleEdit, base: Mapping[str, Any]) -> tuple[bool, str]:
    """Syntax and interface: the edited document parses and changes only its module."""
    try:
        parse_harness(edit.document)
    except HarnessError as exc:
        return False, f"does not parse: {exc}"
    touched = sorted(module_diff(base, edit.document))
    if touched != [edit.module]:
        return False, f"touches modules {touched}, not only {edit.module}"
    return True, "parses; only its module changed"


def case_literals(payloads: Sequence[Mapping[str, Any]]) -> set[str]:
    """The pool's task-specific literals: template ids and the requests' values."""
    literals = set(TEMPLATES) | {p["template"] for p in payloads}
    for payload in payloads:
        for value in payload.get("params", {}).values():
            values = value.values() if isinstance(value, Mapping) else [value]
            literals |= {str(v) for v in values if not isinstance(v, bool) and len(str(v)) >= MIN_LITERAL}
    return literals


def gate_overfit(edit: ModuleEdit, literals: Iterable[str]) -> tuple[bool, str]:
    """The overfitting diff review: rejects a diff that names a template or a case value."""
    found = sorted(v for v in set(literals) if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", edit.diff))
    return (False, f"names task literals {found[:5]}") if found else (True, "no template ids or case literals")


def gate_run(base_success: Mapping[str, float], edited_success: Mapping[str, float]) -> tuple[bool, str]:
    """The run on two batch tasks: the edit runs them and solves no fewer than the base
    (passing says it runs and breaks nothing there, not that it helps)."""
    cases = sorted(base_success)
    if sorted(edited_success) != cases:
        return False, f"not run on the same tasks {cases}"
    base, edited = sum(base_success.values()), sum(edited_success.values())
    verdict = edited >= base
    return verdict, f"{edited:g}/{len(cases)} solved vs base {base:g} on {','.join(cases)}"


def integrate(base: Mapping[str, Any], accepted: Sequence[ModuleEdit]) -> tuple[dict[str, Any], list[str]]:
    """(merged harness, conflicts): every accepted module's items replace the base's
    items of that module; a rule whose trigger an earlier module already reacts to is
    dropped and recorded as a conflict (toolsim would never reach it)."""
    modules = split_modules(base)
    for edit in accepted:
        modules[edit.module] = split_modules(edit.document)[edit.module]
    seen: list[tuple[str, str, str]] = []  # (code, tool, module) of the error rules kept so far
    conflicts: list[str] = []
    merged: dict[str, list] = {m: [] for m in MODULES}
    for module in MODULES:
        for item in modules[module]:
            key = error_trigger(item)
            owner = next((m for code, tool, m in seen if code == key[0] and tool in ("*", key[1])),
                         None) if key else None
            if owner is not None and owner != module:
                conflicts.append(f"{module}:{item.get('id', '?')} shadowed by {owner} on {key[0]}/{key[1]}")
                continue
            if key:
                seen.append((*key, module))
            merged[module].append(item)
    return join_modules(merged, int(base.get("version", 1))), conflicts


def error_trigger(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """(code, tool) of a rule reacting to an error: such rules compete (the first
    matching one wins); rules of other trigger kinds all fire."""
    trigger = item.get("trigger", {})
    return (trigger["on_error"], trigger.get("tool", "*")) if "on_error" in trigger else None


def same_behaviour(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two documents hold the same items by behaviour."""
    return sorted(map(body, a.get("rules", []) + a.get("skills", []))) == sorted(
        map(body, b.get("rules", []) + b.get("skills", [])))
