"""MOSCOPT's edit catalogue on toolsim, fixed per run from the seed harness's train
failures: every rule the rule proposer (``tasks.proposers.rules``) derives from them, a
retry-on-any-tool rule per toolsim error code, and a plan skill per template (its default
plan, re-run up to twice when a step fails). Stage-1 edits draw from it; the seed pool
is it grouped by theme (``pool.seed_pool``). Pure."""

from __future__ import annotations

import copy
import json
from typing import Any, Sequence

from suites.toolsim.templates import TEMPLATES
from suites.toolsim.tools import ERROR_CODES
from tasks.proposers.rule_evidence import Evidence, Trace
from tasks.proposers.rules import RuleProposer

SEED_HARNESS = {"version": 1, "rules": [], "skills": []}
PLAN_RETRIES = 2


def catalogue(traces: Sequence[Trace]) -> dict[str, list[dict[str, Any]]]:
    """{"rules": [...], "plans": [...]}, ids unique, in a fixed order."""
    found = [c.item for c in RuleProposer().candidates(Evidence.of(traces), SEED_HARNESS) if c.edit == "add_rule"]
    found += [{"id": f"retry-any-{code}", "trigger": {"on_error": code, "tool": "*"},
               "action": {"retry": {"max": 2}}} for code in ERROR_CODES]
    rules, seen = [], set()
    for rule in found:
        body = json.dumps({k: v for k, v in rule.items() if k != "id"}, sort_keys=True)
        if rule["id"] not in seen and body not in seen:
            seen.update((rule["id"], body))
            rules.append(copy.deepcopy(rule))
    plans = [{"name": f"plan_{name}", "trigger": {"template": name}, "steps": [dict(s) for s in template.plan],
              "retries": PLAN_RETRIES} for name, template in TEMPLATES.items()]
    return {"rules": rules, "plans": plans}
