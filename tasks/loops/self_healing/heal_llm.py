"""The self_healing rule writer behind `proposer: llm`: the paper's frozen agent LLM reads
the workspace evidence (the champion's failing train cases) and returns a rule. Here the
chat endpoint gets the champion harness program and that evidence, and answers with an
edit of the program; the edit is a proposal only if the harness it returns is a literal
document that parses and adds exactly one rule or skill (``added_tool``, shared with
medrsi's tool builder). Its triggers are all the failing cases shown; the replay gate
picks 3 of them, as for the rule proposer's proposals.

Offline (no RATCHET_LLM_* endpoint) the loop's default, the rule proposer, writes the
rules and this module is never called. An answer that is not one rule yields no
proposal for the round (the loop stops, as when the rule proposer has no edit left)."""

from __future__ import annotations

import json
import random
from typing import Any, Sequence

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from suites.toolsim.harness import HarnessError, parse_harness
from tasks.harness_loops.documents import added_tool, literal_document
from tasks.proposers import DiffError, LLMProposer, ParentInfo
from tasks.proposers.rule_evidence import Trace
from tasks.proposers.rules import RuleProposal

OPERATOR = "llm_rule"
BRIEF = """You heal a toolsim customer-service agent by adding ONE behaviour rule (trigger +
action) or ONE skill (a template's procedure) to its harness, in the harness format of
suites/toolsim/harness.py. `harness()` must return a literal mapping. Keep every
existing rule and skill. A rule must fix a failing case without breaking the cases the
agent already serves: an external replay gate checks both.

Failing train cases (goal not met / guard broken, last step and its result):
{cases}"""


def brief(failures: Sequence[Trace]) -> str:
    lines = [f"- {t.case_id}: unmet {list(t.unmet)}, broken {list(t.broken)}, last step "
             f"{t.steps[-1]['name'] if t.steps else None} -> {t.steps[-1]['result_json'] if t.steps else None}"
             for t in failures]
    return BRIEF.format(cases="\n".join(lines))


def llm_rule(champion_id: str, champion_source: str, champion: dict[str, Any], traces: Sequence[Trace],
             config: EvolveConfig, rng: random.Random) -> RuleProposal | str:
    """The rule the endpoint wrote for the champion's failures, or the reason its
    answer is not one rule (or that there is nothing to heal)."""
    failures = [t for t in traces if not t.success]
    if not failures:
        return "the champion fails no train case: nothing to heal"
    proposer = LLMProposer(config, task_description=brief(failures), entrypoint="harness")
    try:
        proposal = proposer.propose([ParentInfo(champion_id, champion_source, None)], rng)
        document = literal_document(proposal.source)
        parse_harness(document)
    except (DiffError, ValueError, HarnessError) as exc:  # HarnessError is a ValueError; named for the reader
        return f"the llm's answer is not a valid harness: {exc}"
    found = added_tool(champion, document)
    if found is None:
        return "the llm's answer does not add exactly one rule or skill to the champion harness"
    _, item = found
    return RuleProposal(
        document=document, triggers=tuple(t.case_id for t in failures), rationale=proposal.summary,
        operator=OPERATOR, key=content_id(json.dumps(item, sort_keys=True)), target=item.get("id") or item["name"],
        support=len(failures),
    )
