"""GraphSkillEvo's `proposer: llm` path: the chat endpoint mutates one skill from its
failed trajectories, or crosses two skills (prompts ``graphskillevo_mutate.txt`` and
``graphskillevo_crossover.txt`` in tasks/proposers/prompts/). The skill is shown as a
program whose ``skill()`` returns the skill document; the answer's program must return
one literal mapping (``Offspring.skill`` is None when it does not, with the reason as
its rationale). Whatever it returns becomes an offspring that the gate checks for
validity first: a graph that breaks a rule, or an answer with no program, is an
invalid offspring with the reason recorded, never a crash and never run.

Offline (no RATCHET_LLM_* endpoint) the loop's default, the non-LLM operators of
``operators.py``, proposes; a run asking for `llm` without one stops at its first
proposal with the proposer's message on how to configure one."""

from __future__ import annotations

import json
import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import harness_source, literal_document
from tasks.harness_loops.llm_edit import brief
from tasks.loops.graphskillevo.operators import CROSSOVER, MUTATE, Offspring
from tasks.proposers import LLMProposer, ParentInfo, Proposal, ProposerUnavailable
from tasks.proposers.rule_evidence import Trace

ENTRYPOINT = "skill"
MUTATE_PROMPT, CROSSOVER_PROMPT = "graphskillevo_mutate.txt", "graphskillevo_crossover.txt"


def skill_program(skill: Mapping[str, Any]) -> str:
    return harness_source(skill, ENTRYPOINT, "A GraphSkillEvo skill: principles and a step graph.")


def failure_lines(failures: Sequence[Trace]) -> str:
    def line(trace: Trace) -> str:
        last = trace.steps[-1] if trace.steps else None
        ending = f"{last['name']} -> {last['result_json']}" if last else "no step"
        return f"- {trace.case_id} ({trace.template}): unmet {list(trace.unmet)}, last step {ending}"

    return "\n".join(line(t) for t in failures) or "(none)"


def _ask(parent_id: str, parent: Mapping[str, Any], description: str, config: EvolveConfig,
         rng: random.Random) -> tuple[dict[str, Any] | None, str, Proposal]:
    """(the answer's skill document or None, what the call gave, the call)."""
    proposer = LLMProposer(config, task_description=description, entrypoint=ENTRYPOINT)
    ready, message = proposer.available()
    if not ready:
        raise ProposerUnavailable(message)
    call = proposer.propose([ParentInfo(parent_id, skill_program(parent), None)], rng)
    if call.unusable is not None:
        return None, f"llm answer unusable: {call.unusable}", call
    try:
        return literal_document(call.source, ENTRYPOINT), call.summary, call
    except ValueError as exc:
        return None, f"llm answer gives no skill: {exc}", call


def llm_mutate(parent: Mapping[str, Any], parent_id: str, failures: Sequence[Trace], config: EvolveConfig,
               rng: random.Random) -> tuple[Offspring, Proposal]:
    description = brief(MUTATE_PROMPT, count=len(failures), failures=failure_lines(failures))
    skill, why, call = _ask(parent_id, parent, description, config, rng)
    return Offspring(skill, f"llm_{MUTATE}", (parent_id,), why), call


def llm_crossover(a: Mapping[str, Any], a_id: str, b: Mapping[str, Any], b_id: str, b_score: float,
                  config: EvolveConfig, rng: random.Random) -> tuple[Offspring, Proposal]:
    description = brief(CROSSOVER_PROMPT, score=f"{b_score:.3f}", other=json.dumps(b, sort_keys=True))
    skill, why, call = _ask(a_id, a, description, config, rng)
    return Offspring(skill, f"llm_{CROSSOVER}", (a_id, b_id), why), call
