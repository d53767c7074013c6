"""The designer_rsi skill writer behind `proposer: llm` (the paper's skill writer): the
chat endpoint gets the champion's harness program and a brief of one pool record (a
gap's unmet requirements, or a failing item's broken steps, and the item's successes
to contrast) and answers with an edit of the program. The edit counts only if the
harness it returns is a literal document that parses and differs from the champion's.

Offline (no RATCHET_LLM_* endpoint) the loop's default, the rule proposer's operators,
writes the edits; a run asking for `llm` without an endpoint stops at its first design
stage with the proposer's message on how to configure one (``require_endpoint``)."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from tasks.harness_loops.llm_edit import NoLLMEdit, edited_harness
from tasks.harness_loops.llm_edit import brief as llm_brief
from tasks.loops.designer_rsi.designer_logic import EXPAND, Design, PoolRecord
from tasks.proposers import LLMProposer, Proposal, ProposerUnavailable
from tasks.proposers.rule_evidence import Evidence, Trace
from tasks.proposers.rules import RuleProposal

PROMPT = "designer_rsi_edit.txt"
TASKS = {
    EXPAND: "Requests of template {subject} completed their plan but left requirements unmet: "
            "write ONE new skill (or rule) that covers the missing subtask.",
    "deepen": "The library item {subject} made the step that broke these requests: revise it "
              "locally (retry, wait, precondition, another tool) rather than rewriting it.",
}


def _line(trace: Trace) -> str:
    last = trace.steps[-1] if trace.steps else None
    ending = f"{last['name']} -> {last['result_json']}" if last else "no step"
    return f"- {trace.case_id}: unmet {list(trace.unmet)}, broken {list(trace.broken)}, last step {ending}"


def brief(record: PoolRecord, evidence: Evidence) -> str:
    subject = record.signature.split("|", 1)[0] if record.pool == EXPAND else record.signature.split(":", 1)[1]
    return llm_brief(PROMPT, task=TASKS[record.pool].format(subject=subject), count=record.count,
                        failures="\n".join(_line(t) for t in evidence.failures) or "(none)",
                        successes="\n".join(f"- {t.case_id}" for t in evidence.successes[:10]) or "(none)")


def edited_target(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """Id or name of the first rule or skill the edit added or changed; None when the
    library is unchanged (a removal names the first item that disappeared)."""
    for kind, field in (("rules", "id"), ("skills", "name")):
        old = {json.dumps(i, sort_keys=True) for i in before.get(kind, [])}
        new = {json.dumps(i, sort_keys=True) for i in after.get(kind, [])}
        changed = sorted(new - old) or sorted(old - new)
        if changed:
            return str(json.loads(changed[0]).get(field, kind))
    return None


def require_endpoint(config: EvolveConfig) -> None:
    """Raise ProposerUnavailable (its message says which variables to set) offline."""
    ready, message = LLMProposer(config).available()
    if not ready:
        raise ProposerUnavailable(message)


def llm_design(
    records: Sequence[PoolRecord], evidence_for: Mapping[str, Evidence], champion_id: str, champion_source: str,
    document: Mapping[str, Any], config: EvolveConfig, rng: random.Random,
) -> tuple[Design, Proposal]:
    """(the design, the call) of the endpoint's edit for the first eligible record; raises
    NoLLMEdit with the reason (and the call, when the model was asked) when there is none."""
    if not records:
        raise NoLLMEdit("no pool record reached its threshold")
    record = records[0]
    require_endpoint(config)
    edited, call = edited_harness(champion_id, champion_source, brief(record, evidence_for[record.signature]),
                                  config, rng)
    target = edited_target(document, edited)
    if target is None:
        raise NoLLMEdit("the llm's answer leaves the library unchanged", call)
    key = hashlib.sha256(json.dumps(edited, sort_keys=True).encode()).hexdigest()[:16]
    proposal = RuleProposal(dict(edited), tuple(record.case_ids), call.summary, f"llm_{record.pool}", key, target,
                            record.count, call=call)
    return Design(record, proposal), call
