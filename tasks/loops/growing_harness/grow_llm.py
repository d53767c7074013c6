"""The growing_harness optimizer behind `proposer: llm` (the paper's optimizer LLM): the
chat endpoint gets the working harness program, the traces of the window's failing
tasks (last steps, unmet goals, broken guards) and the paper's constraints, and answers
with one localized patch of the program. The patch counts only if the harness it returns
is a literal document that parses and differs from the working one; it is then the
step's whole joint patch (its triggers: every failing window task shown).

Offline (no RATCHET_LLM_* endpoint) the loop's default, the rule proposer, patches the
window; a run asking for `llm` without an endpoint stops with the proposer's message on
how to configure it, before anything is recorded for the step."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from suites.toolsim.harness import HarnessError, parse_harness
from tasks.harness_loops.documents import literal_document
from tasks.proposers import DiffError, LLMProposer, ParentInfo
from tasks.proposers.rule_evidence import Trace
from tasks.proposers.rules import RuleProposal

OPERATOR = "llm_patch"
BRIEF = """You grow the shared harness of a toolsim customer-service agent (the harness
format of suites/toolsim/harness.py: rules are trigger + action, skills are a
template's procedure). `harness()` must return a literal mapping.
Patch the harness so that the failing tasks below succeed. Constraints: keep the
interfaces (the harness format and tool names), limit the edit's scope to the rules or
skills these traces implicate (small new rules or skills are allowed), and never
hard-code task ids or answers: the patched harness must serve unseen requests.

Failing tasks in the rolling window (unmet goals / broken guards, then each tool call):
{cases}"""


def brief(failures: Sequence[Trace]) -> str:
    lines = []
    for trace in failures:
        calls = "; ".join(f"{s['name']}({s['args_json']}) -> {'ok' if s['ok'] else s['result_json']}"
                          for s in trace.steps[-6:])
        lines.append(f"- {trace.template}: unmet {list(trace.unmet)}, broken {list(trace.broken)}; {calls}")
    return BRIEF.format(cases="\n".join(lines))


def llm_patch(working_id: str, working_source: str, working: Mapping[str, Any], failures: Sequence[Trace],
              config: EvolveConfig, rng: random.Random) -> RuleProposal | str:
    """The endpoint's patch of the working harness for the window's failures, or the
    reason its answer is not a usable patch."""
    if not failures:
        return "the window holds no failing task: nothing to patch"
    proposer = LLMProposer(config, task_description=brief(failures), entrypoint="harness")
    try:
        proposal = proposer.propose([ParentInfo(working_id, working_source, None)], rng)
        document = literal_document(proposal.source)
        parse_harness(document)
    except (DiffError, ValueError, HarnessError) as exc:  # HarnessError is a ValueError; named for the reader
        return f"the llm's answer is not a valid harness: {exc}"
    text = json.dumps(document, sort_keys=True)
    if text == json.dumps(dict(working), sort_keys=True):
        return "the llm's answer leaves the harness unchanged"
    return RuleProposal(document=document, triggers=tuple(t.case_id for t in failures), rationale=proposal.summary,
                        operator=OPERATOR, key=hashlib.sha256(text.encode()).hexdigest()[:16], target="harness",
                        support=len(failures))
