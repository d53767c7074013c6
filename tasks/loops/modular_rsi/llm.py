"""The modifier behind `proposer: llm`: the chat endpoint gets one finding, the base
harness program, the module's scope and its edit history, and answers with an edited
program. The answer is an edit of that module only if its harness parses; the gate's
static check then rejects it when it touches another module, so the LLM's edit faces the
same three checks as the rule proposer's. The analyst, reviewer and integrator stay the
non-LLM ones (contrast, overfit review, integration). Offline (no RATCHET_LLM_*
endpoint) the rule proposer's module-scoped catalogue is the modifier and this module
is never called; an answer that is no harness gives no edit for the module that round."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, edited_harness
from tasks.harness_loops.llm_edit import brief as llm_brief
from tasks.loops.modular_rsi.contrast import Finding
from tasks.loops.modular_rsi.evolve import ModuleEdit, version
from tasks.loops.modular_rsi.modules import diff_text, module_diff
from tasks.proposers.rule_evidence import Trace

PROMPT = "modular_rsi_modifier.txt"
OPERATOR = "llm_module_edit"
SCOPES = {
    "tool_wrapper": "on_error rules with a retry or switch_tool action (retrying tool wrapper)",
    "observation": "paginate rules and on_result retry rules (observation parser)",
    "context": "call_first rules (fetch what a call needs first)",
    "step_loop": "skills (a template's plan and its re-runs)",
    "completion": "then_call rules (finish what the goal needs after a call)",
}


def brief(module: str, finding: Finding, failures: Sequence[Trace], history: Sequence[str]) -> str:
    lines = [f"- {t.case_id}: last step {t.steps[-1]['name'] if t.steps else None} -> "
             f"{t.steps[-1]['result_json'] if t.steps else None}" for t in failures[:8]]
    return llm_brief(PROMPT, module=module, scope=SCOPES[module], finding=finding.text,
                     cases="\n".join(lines) or "(none)", history="\n".join(history) or "(none)")


def llm_modify(base: Mapping[str, Any], finding: Finding, traces: Sequence[Trace], history: Sequence[str],
               config: EvolveConfig, rng: random.Random) -> ModuleEdit:
    """The endpoint's edit of ``finding.module`` from ``base``; raises NoLLMEdit (with the
    call) when the answer is no valid harness or changes nothing."""
    failures = [t for t in traces if not t.success]
    source = harness_source(base)
    document, call = edited_harness(version(base), source, brief(finding.module, finding, failures, history),
                                    config, rng)
    diff = module_diff(base, document)
    if not diff:
        raise NoLLMEdit("the llm's answer changes no module", call)
    return ModuleEdit(finding.module, version(base), document, diff_text(diff),
                      content_id(diff_text(diff)), OPERATOR, call.summary[:2000])
