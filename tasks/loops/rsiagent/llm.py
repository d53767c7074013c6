"""RSIAgent's memory writer behind `proposer: llm`: trace + verdict in, one edited memory
out (``tasks/proposers/prompts/rsiagent_memory.txt``). The edit is verified like the
rule writer's (``practice.recover``): it becomes an entry only when the re-run passes.
An answer that is no valid harness is no edit (``NoLLMEdit`` -> None); the writer keeps
every such refusal of an answer the model gave (``refused``) for distill to record as an
``llm_unusable`` candidate with its reason and raw answer. Offline the rule writer
(``practice.rule_writer``) is the default and this module is never called."""

from __future__ import annotations

import random
from typing import Any, Mapping

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, brief, edited_harness
from tasks.loops.rsiagent.memory import signature
from tasks.loops.rsiagent.practice import Writer
from tasks.proposers.rule_evidence import Trace

PROMPT = "rsiagent_memory.txt"


def memory_brief(trace: Trace) -> str:
    lines = [f"{s['step']}. {s['name']} ok={s['ok']} {str(s.get('result_json', ''))[:160]}" for s in trace.steps]
    return brief(PROMPT, template=trace.template, cause=signature(trace), unmet=", ".join(trace.unmet) or "-",
                 broken=", ".join(trace.broken) or "-", trajectory="\n".join(lines[-20:]) or "(no steps)")


class LLMWriter:
    """The memory writer over the chat endpoint; ``refused``: the answers it could not use."""

    def __init__(self, config: EvolveConfig) -> None:
        self.config, self.refused = config, []

    def __call__(self, trace: Trace, harness: Mapping[str, Any], rng: random.Random) -> dict[str, Any] | None:
        source = harness_source(dict(harness))
        try:
            document, _ = edited_harness(content_id(source), source, memory_brief(trace), self.config, rng)
        except NoLLMEdit as reason:
            if reason.asked:
                self.refused.append(reason)
            return None
        return document


def llm_writer(config: EvolveConfig) -> Writer:
    return LLMWriter(config)
