"""Harness documents and rule proposals, as every harness loop stores them: the candidate
program of a document (`harness_source`, so equal documents are equal candidates in
every loop), the document a program returns read without running it
(`literal_document`), the stored JSON of a proposal and its distillate text, and the
one tool an edited harness adds (`added_tool`). Pure; no I/O."""

from __future__ import annotations

import ast
import json
import pprint
from typing import Any, Mapping

from tasks.proposers.rules import RuleProposal


def literal_document(source: str, entrypoint: str = "harness") -> dict[str, Any]:
    """The mapping a program's ``harness()`` (or ``entrypoint()``) returns, read without
    running it; raises ValueError when it is not one literal ``return``."""
    try:
        module = ast.parse(source)
        function = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == entrypoint)
        returned = next(n for n in function.body if isinstance(n, ast.Return))
        document = ast.literal_eval(returned.value)
    except (SyntaxError, StopIteration, ValueError) as exc:
        raise ValueError(f"{entrypoint}() does not return one literal document: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{entrypoint}() returns a {type(document).__name__}, not a mapping")
    return document


def added_tool(stable: Mapping[str, Any], edited: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(edit, item) of the one tool an edited harness adds to the stable one: a new
    rule, or a new or rewritten skill. None when it adds nothing, more than one thing,
    or drops a stable rule (a tool builder adds tools; it does not rewrite the toolbox)."""
    old_rules = [_body(r) for r in stable.get("rules", [])]
    new_rules = [_body(r) for r in edited.get("rules", [])]
    if any(new_rules.count(b) < old_rules.count(b) for b in old_rules):
        return None
    added_rules = [r for r in edited.get("rules", []) if new_rules.count(_body(r)) > old_rules.count(_body(r))]
    old_skills = {s["trigger"]["template"]: _body(s) for s in stable.get("skills", [])}
    new_skills = {s["trigger"]["template"]: s for s in edited.get("skills", [])}
    if not set(old_skills) <= set(new_skills):
        return None
    added_skills = [s for t, s in sorted(new_skills.items()) if old_skills.get(t) != _body(s)]
    found = [("add_rule", dict(r)) for r in added_rules] + [("put_skill", dict(s)) for s in added_skills]
    return found[0] if len(found) == 1 else None


def _body(item: Mapping[str, Any]) -> str:
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "name", "note")}, sort_keys=True)


def harness_source(document: Mapping[str, Any], entrypoint: str = "harness",
                   title: str = "A toolsim harness document.") -> str:
    """The candidate program of a harness document: ``harness()`` returns the literal.
    Deterministic (sorted keys) and the same in every harness loop, so equal documents
    are equal candidates whichever loop proposed them. ``entrypoint``/``title`` name
    another literal program (graphskillevo's ``skill()`` shown to the chat endpoint)."""
    literal = pprint.pformat(json.loads(json.dumps(document, sort_keys=True)), sort_dicts=True, width=100)
    return f'"""{title}"""\n\n\ndef {entrypoint}():\n    return {literal}\n'


def proposal_json(proposal: RuleProposal) -> str:
    """The whole proposal as JSON (stored as a blob; the distillate row points at it)."""
    return json.dumps({
        "document": proposal.document, "triggers": list(proposal.triggers), "rationale": proposal.rationale,
        "operator": proposal.operator, "key": proposal.key, "target": proposal.target, "support": proposal.support,
    }, sort_keys=True)


def proposal_of(text: str | bytes) -> RuleProposal:
    raw = json.loads(text)
    return RuleProposal(
        document=raw["document"], triggers=tuple(raw["triggers"]), rationale=raw["rationale"],
        operator=raw["operator"], key=raw["key"], target=raw["target"], support=int(raw["support"]),
    )


def edited_item(proposal: RuleProposal) -> dict[str, Any] | None:
    """The rule or skill the proposal added or revised (None for a removal)."""
    for kind, field in (("rules", "id"), ("skills", "name")):
        for item in proposal.document.get(kind, []):
            if item.get(field) == proposal.target:
                return item
    return None


def rule_text(proposal: RuleProposal) -> str:
    """The distillate's content: the rule text, its index keys and the rationale."""
    templates = sorted({t.split("/", 1)[0] for t in proposal.triggers})
    return json.dumps({
        "target": proposal.target, "operator": proposal.operator, "rule": edited_item(proposal),
        "index_keys": [proposal.operator, *templates], "rationale": proposal.rationale,
    }, sort_keys=True)
