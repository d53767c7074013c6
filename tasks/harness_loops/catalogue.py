"""A harness loop's fixed rule catalogue, read once from a harness's failing traces: every
rule the rule proposer (``tasks.proposers.rules``) derives from them, then a
retry-on-any-tool rule per toolsim error code (rules a text-only reader finds thorough,
whether or not they help); ids and bodies unique, in a fixed order. Used by skilllift's
mutations and moscopt's skill edits. Pure."""

from __future__ import annotations

import copy
import json
from typing import Any, Mapping, Sequence

from suites.toolsim.tools import ERROR_CODES
from tasks.proposers.rule_evidence import Evidence, Trace
from tasks.proposers.rules import RuleProposer


def rule_catalogue(traces: Sequence[Trace], harness: Mapping[str, Any]) -> list[dict[str, Any]]:
    found = [c.item for c in RuleProposer().candidates(Evidence.of(traces), harness) if c.edit == "add_rule"]
    found += [{"id": f"retry-any-{code}", "trigger": {"on_error": code, "tool": "*"},
               "action": {"retry": {"max": 2}}} for code in ERROR_CODES]
    out, seen = [], set()
    for rule in found:
        body = json.dumps({k: v for k, v in rule.items() if k != "id"}, sort_keys=True)
        if rule["id"] not in seen and body not in seen:
            seen.update((rule["id"], body))
            out.append(copy.deepcopy(rule))
    return out
