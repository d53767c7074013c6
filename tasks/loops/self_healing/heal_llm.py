"""The self_healing rule writer behind `proposer: llm`: the paper's frozen agent LLM reads
the workspace evidence (the champion's failing train cases) and returns a rule. Here the
chat endpoint gets the champion harness program and that evidence, and answers with an
edit of the program; the edit is a proposal only if the harness it returns is a literal
document that parses and adds exactly one rule or skill (``added_tool``, shared with
medrsi's tool builder). Its triggers are all the failing cases shown; the replay gate
picks 3 of them, as for the rule proposer's proposals.

Offline (no RATCHET_LLM_* endpoint) the loop's default, the rule proposer, writes the
rules and this module is never called. An answer that is not one rule yields no
proposal for the round: the heal stage records it as an ``llm_unusable`` candidate with the
reason and the raw answer (``tasks.harness_loops.llm_edit.unusable_row``), and the next round asks again."""

from __future__ import annotations

import json
import random
from typing import Any, Sequence

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.harness_loops.documents import added_tool
from tasks.harness_loops.llm_edit import NoLLMEdit, edited_harness
from tasks.harness_loops.llm_edit import brief as llm_brief
from tasks.proposers import Proposal
from tasks.proposers.rule_evidence import Trace
from tasks.proposers.rules import RuleProposal

OPERATOR = "llm_rule"
PROMPT = "self_healing_rule.txt"


def brief(failures: Sequence[Trace]) -> str:
    lines = [f"- {t.case_id}: unmet {list(t.unmet)}, broken {list(t.broken)}, last step "
             f"{t.steps[-1]['name'] if t.steps else None} -> {t.steps[-1]['result_json'] if t.steps else None}"
             for t in failures]
    return llm_brief(PROMPT, cases="\n".join(lines))


def llm_rule(champion_id: str, champion_source: str, champion: dict[str, Any], traces: Sequence[Trace],
             config: EvolveConfig, rng: random.Random) -> tuple[RuleProposal, Proposal]:
    """(the rule, the call) the endpoint wrote for the champion's failures; raises NoLLMEdit
    with the reason (and the call) when its answer is not one rule (or there is nothing to heal)."""
    failures = [t for t in traces if not t.success]
    if not failures:
        raise NoLLMEdit("the champion fails no train case: nothing to heal")
    document, call = edited_harness(champion_id, champion_source, brief(failures), config, rng)
    found = added_tool(champion, document)
    if found is None:
        raise NoLLMEdit("the llm's answer does not add exactly one rule or skill to the champion harness", call)
    _, item = found
    return RuleProposal(
        document=document, triggers=tuple(t.case_id for t in failures), rationale=call.summary,
        operator=OPERATOR, key=content_id(json.dumps(item, sort_keys=True)), target=item.get("id") or item["name"],
        support=len(failures), call=call,
    ), call
