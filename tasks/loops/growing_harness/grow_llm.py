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
from tasks.harness_loops.llm_edit import NoLLMEdit, edited_harness
from tasks.harness_loops.llm_edit import brief as llm_brief
from tasks.proposers import Proposal
from tasks.proposers.rule_evidence import Trace
from tasks.proposers.rules import RuleProposal

OPERATOR = "llm_patch"
PROMPT = "growing_harness_patch.txt"


def brief(failures: Sequence[Trace]) -> str:
    lines = []
    for trace in failures:
        calls = "; ".join(f"{s['name']}({s['args_json']}) -> {'ok' if s['ok'] else s['result_json']}"
                          for s in trace.steps[-6:])
        lines.append(f"- {trace.template}: unmet {list(trace.unmet)}, broken {list(trace.broken)}; {calls}")
    return llm_brief(PROMPT, cases="\n".join(lines))


def llm_patch(working_id: str, working_source: str, working: Mapping[str, Any], failures: Sequence[Trace],
              config: EvolveConfig, rng: random.Random) -> tuple[RuleProposal, Proposal]:
    """(the patch, the call) the endpoint wrote for the window's failures; raises NoLLMEdit
    with the reason (and the call) when its answer is not a usable patch."""
    if not failures:
        raise NoLLMEdit("the window holds no failing task: nothing to patch")
    document, call = edited_harness(working_id, working_source, brief(failures), config, rng)
    text = json.dumps(document, sort_keys=True)
    if text == json.dumps(dict(working), sort_keys=True):
        raise NoLLMEdit("the llm's answer leaves the harness unchanged", call)
    return RuleProposal(document=document, triggers=tuple(t.case_id for t in failures), rationale=call.summary,
                        operator=OPERATOR, key=hashlib.sha256(text.encode()).hexdigest()[:16], target="harness",
                        support=len(failures), call=call), call
