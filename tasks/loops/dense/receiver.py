"""The frozen receiver: toolsim's procedural agent, which never changes, and the harness
it runs with. The initial attempt runs the *starter* harness; a retry runs the starter
harness as the receiver adapts it to the feedback it was handed:

- it prioritises open subgoals: a remedy for each issue it believes open goes before
  the starter's generic rules (the agent applies the first matching rule);
- it skips known-failing variants and replays shortcuts: a completed subgoal that needed
  a recovery (a lookup by alias that had to be switched, a refused call) runs its working
  operation directly, with the arguments it worked with.

Remedies are the receiver's fixed repertoire, keyed by what an issue says, never by the
outcome: a pick with no match while a page cursor was open -> read every page of the
plan's paged tools; a refusal whose message names the status the call needs ->
``call_first`` the write tool named for that status; a fault still failing after the
starter's retries -> retry that tool longer with a backoff. Anything else has no remedy.

Which issues a method lets the receiver believe open: ``raw`` every error (it has no
observations, so no cursor), ``flat`` every issue (closed or not), ``tree`` and
``tree_nsr`` those their tree left open. Only ``tree`` carries shortcuts.

``labelled`` is the outcome-labelled reference: the rule proposer
(``tasks.proposers.rules``) edits the starter harness from the same trajectory and its
hidden verdict (unmet goals, broken guards), up to ``edits`` times.
"""

from __future__ import annotations

import copy
import random
from typing import Any, Mapping

from suites.toolsim.templates import TEMPLATES, get_template
from suites.toolsim.tools import TOOLS
from tasks.proposers.rule_evidence import Evidence, Trace, tools_named
from tasks.proposers.rules import NoRuleEvidence, RuleProposer

STARTER_RULES = (
    {"id": "retry-transient", "trigger": {"on_error": "transient_unavailable", "tool": "*"},
     "action": {"retry": {"max": 2}}},
    {"id": "wait-rate-limited", "trigger": {"on_error": "rate_limited", "tool": "*"},
     "action": {"retry": {"max": 1, "backoff": 2}}},
    {"id": "alias-lookup", "trigger": {"on_error": "not_found", "tool": "find_user_by_email"},
     "action": {"switch_tool": {"tool": "search_users", "args": {"query": "$email"}}}},
)
STARTER_RETRIES = 1
FAULTS = ("transient_unavailable", "rate_limited")
NEEDS = "needs it to be "


def skill_name(template: str) -> str:
    return f"plan-{template}"


def starter_harness() -> dict[str, Any]:
    """Generic fault rules and every template's default plan as a skill retried once."""
    skills = [{"name": skill_name(t), "trigger": {"template": t}, "steps": copy.deepcopy(list(get_template(t).plan)),
               "retries": STARTER_RETRIES} for t in TEMPLATES]
    return {"version": 1, "rules": copy.deepcopy(list(STARTER_RULES)), "skills": skills}


def remedy(template: str, issue: Mapping[str, Any]) -> dict[str, Any] | None:
    """The repertoire's rule for one issue (see the module docstring), or None."""
    kind, name, code = issue["kind"], issue["name"], issue["code"]
    if kind == "pick" and code == "no_match" and issue.get("next_page"):
        paged = [s["call"] for s in get_template(template).plan if "call" in s and "page" in TOOLS[s["call"]].args]
        return {"id": f"fb-paginate-{paged[0]}", "trigger": {"before": paged[0]},
                "action": {"paginate": {"max_pages": 10}}} if paged else None
    if kind != "tool_call":
        return None
    if code == "precondition_failed" and NEEDS in issue.get("message", ""):
        needed = issue["message"].split(NEEDS, 1)[1].replace(" or ", "_")
        fixes = [t for t in tools_named(needed) if t != name]
        return {"id": f"fb-first-{fixes[0]}-{name}", "trigger": {"on_error": code, "tool": name},
                "action": {"call_first": {"tool": fixes[0]}}} if fixes else None
    if code in FAULTS:
        return {"id": f"fb-retry-{name}-{code}", "trigger": {"on_error": code, "tool": name},
                "action": {"retry": {"max": 4, "backoff": 2}}}
    return None


def believed_open(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The issues a feedback document lets the receiver believe open, as remedy input."""
    method = document["method"]
    if method == "raw":
        return [{"kind": "tool_call", "name": e["tool"], "code": e["code"], "message": e["message"]}
                for e in document["errors"]]
    if method == "flat":
        return list(document["issues"])
    if method in ("tree", "tree_nsr"):
        return [i for node in document["nodes"] if node["status"] != "completed"
                for i in node["issues"] if not i["closed"]]
    return []


def shortcut_steps(template: str, document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The plan with each recovered subgoal's working call replayed directly, with the
    arguments it worked with (the failing variant is skipped)."""
    steps = copy.deepcopy(list(get_template(template).plan))
    for node in document.get("nodes", ()):
        work, index = node.get("shortcut"), int(node["node"][1:])
        planned = steps[index].get("call")
        if work and node.get("recovered") and work["kind"] == "tool_call" and planned:
            steps[index] = {"call": work["name"], "args": dict(work["args"])}
    return steps


def receive(template: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """The harness the receiver retries with, given an unlabelled feedback document."""
    harness = starter_harness()
    rules, seen = [], set()
    for issue in believed_open(document):
        rule = remedy(template, issue)
        if rule is not None and rule["id"] not in seen:
            seen.add(rule["id"])
            rules.append(rule)
    harness["rules"] = rules + harness["rules"]
    if document["method"] == "tree":
        skill = next(s for s in harness["skills"] if s["name"] == skill_name(template))
        skill["steps"] = shortcut_steps(template, document)
    return harness


def labelled(trace: Trace, edits: int, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(feedback document, retry harness) of the outcome-labelled reference."""
    harness, rationales, rng = starter_harness(), [], random.Random(seed)
    evidence = Evidence.of([trace])
    for _ in range(edits if not trace.success else 0):
        try:
            proposal = RuleProposer().propose(evidence, harness, rng)
        except NoRuleEvidence:
            break
        harness = proposal.document
        rationales.append(f"{proposal.operator}: {proposal.rationale}")
    document = {"method": "labelled", "success": trace.success, "unmet": list(trace.unmet),
                "broken": list(trace.broken), "edits": rationales}
    return document, harness

