"""MOSCOPT's edit catalogue on toolsim, fixed per run from the seed harness's train
failures: the harness loops' rule catalogue (``harness_loops.catalogue``: the rule
proposer's rules, a retry-on-any-tool rule per error code), and a plan skill per template (its default
plan, re-run up to twice when a step fails). Stage-1 edits draw from it; the seed pool
is it grouped by theme (``pool.seed_pool``). Pure."""

from __future__ import annotations

from typing import Any, Sequence

from suites.toolsim.templates import TEMPLATES
from tasks.harness_loops.catalogue import rule_catalogue
from tasks.proposers.rule_evidence import Trace

SEED_HARNESS = {"version": 1, "rules": [], "skills": []}
PLAN_RETRIES = 2


def catalogue(traces: Sequence[Trace]) -> dict[str, list[dict[str, Any]]]:
    """{"rules": [...], "plans": [...]}, ids unique, in a fixed order."""
    rules = rule_catalogue(traces, SEED_HARNESS)
    plans = [{"name": f"plan_{name}", "trigger": {"template": name}, "steps": [dict(s) for s in template.plan],
              "retries": PLAN_RETRIES} for name, template in TEMPLATES.items()]
    return {"rules": rules, "plans": plans}
