"""LIMBO's budgeted agent behind `proposer: llm`: the chat endpoint is the agent's
in-request repair (failed trace in, one edited harness out;
``tasks/proposers/prompts/limbo_repair.txt``), spending one of the arm's turns; an
answer that is no valid harness is no repair (the request's turns end), recorded as an
``llm_unusable`` candidate of the block. The controller is never an LLM. Offline the
rule proposer (``agent.rule_repair``) is the default and this module is never called."""

from __future__ import annotations

import random
from typing import Any, Mapping

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, brief, edited_harness
from tasks.loops.limbo.agent import Repairer
from tasks.proposers.rule_evidence import Trace

PROMPT = "limbo_repair.txt"


def repair_brief(trace: Trace) -> str:
    lines = [f"{s['step']}. {s['name']} ok={s['ok']} {str(s.get('result_json', ''))[:160]}" for s in trace.steps]
    return brief(PROMPT, template=trace.template, unmet=", ".join(trace.unmet) or "-",
                 broken=", ".join(trace.broken) or "-", trajectory="\n".join(lines[-20:]) or "(no steps)")


class LLMRepairer:
    """The repair turn over the chat endpoint; ``refused``: (the repaired harness's id, why)
    of every answer it could not use, for the block's ``llm_unusable`` candidates."""

    def __init__(self, config: EvolveConfig) -> None:
        self.config, self.refused = config, []

    def __call__(self, trace: Trace, harness: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
        source = harness_source(dict(harness))
        try:
            document, _ = edited_harness(content_id(source), source, repair_brief(trace), self.config, rng)
        except NoLLMEdit as why:
            self.refused.extend([(content_id(source), why)] if why.asked else [])
            return None
        return document


def llm_repairer(config: EvolveConfig) -> Repairer:
    return LLMRepairer(config)
