"""FORGE's reflector behind `proposer: llm`: the batch's imperfect trajectories in, one
revised prompt (harness) out (``tasks/proposers/prompts/forge_reflect.txt``). The revision
goes through the same prompt gate as the rule reflector's. An answer that is no valid
harness is no revision (``NoLLMEdit`` -> None); the step records it as an
``llm_unusable`` candidate with its reason, raw answer and tokens. Offline the rule
reflector (``prompt.rule_reflector``) is the default and this module is never called.
Deviation: the paper's abstractor, generator and verifier are LLMs too; here they are
the signature clustering, the parameter generators and the simulation (``modes``, ``synth``)."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from schemas.ids import content_id
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, brief, edited_harness
from tasks.loops.forge.modes import describe, signature
from tasks.loops.forge.prompt import Reflector
from tasks.proposers.rule_evidence import Trace

PROMPT = "forge_reflect.txt"
SHOWN = 3
"""Imperfect trajectories shown to the model (their last 12 steps each)."""


def reflect_brief(traces: Sequence[Trace]) -> str:
    failed = [t for t in traces if not t.success]
    blocks = []
    for t in failed[:SHOWN]:
        steps = [f"  {s['step']}. {s['name']} ok={s['ok']} {str(s.get('result_json', ''))[:120]}" for s in t.steps]
        blocks.append(f"- {t.template} ({describe(signature(t))}):\n" + "\n".join(steps[-12:]))
    return brief(PROMPT, count=len(failed), total=len(traces), trajectories="\n".join(blocks) or "(none)")


class LLMReflector:
    """The reflector over the chat endpoint; ``refused``: why each answer it could not use
    gave no revision, which the step records as an ``llm_unusable`` candidate."""

    def __init__(self, config: EvolveConfig) -> None:
        self.config, self.refused = config, []

    def __call__(self, traces: Sequence[Trace], harness: Mapping[str, Any],
                 rng: random.Random) -> dict[str, Any] | None:
        source = harness_source(dict(harness))
        try:
            document, _ = edited_harness(content_id(source), source, reflect_brief(traces), self.config, rng)
        except NoLLMEdit as reason:
            if reason.asked:
                self.refused.append(reason)
            return None
        return document


def llm_reflector(config: EvolveConfig) -> Reflector:
    return LLMReflector(config)
