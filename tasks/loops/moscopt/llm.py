"""MOSCOPT's stage-1 proposer behind `proposer: llm`: the chat endpoint reads the target
skill (shown as a harness program), the failing episodes it was loaded on, the number of
rejected edits and the per-operator experience, and returns the edited skill
(``tasks/proposers/prompts/moscopt_skill_edit.txt``). Stages 2 and 3 (G edits, pool edits)
stay the mutation operators of ``edits`` (departure: the paper asks a model for those
too). An answer that is no valid harness is no edit (``NoLLMEdit``): the round proposes
the operators' edit instead and records the answer as an ``llm_unusable`` candidate. Offline the loop's default, the mutation operators, edits
every stage and this module is never called."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, brief, edited_harness
from tasks.loops.moscopt.edits import Edit, Failure, Memory, propose
from tasks.loops.moscopt.pool import Bundle, State, replace_skill, summarised

OPERATOR = "llm_edit"
PROMPT = "moscopt_skill_edit.txt"


def skill_brief(failures: Sequence[Failure], memory: Memory) -> str:
    shown = "\n".join(f"- {f.case_id} ({f.template})" for f in failures[:20]) or "- none"
    experience = "\n".join(f"- {op}: {rate:.2f}" for op, rate in sorted(memory.experience.items())) or "- none yet"
    return brief(PROMPT, failures=shown, rejected=f"{len(memory.rejected)} edits", experience=experience)


def as_document(bundle: Mapping[str, Any]) -> dict[str, Any]:
    return {"version": 1, "rules": list(bundle["rules"]), "skills": list(bundle["skills"])}


def bundle_of(document: Mapping[str, Any], name: str) -> Bundle:
    """The skill an answered harness document makes (the target's name kept)."""
    return summarised({"name": name, "summary": "", "rules": list(document.get("rules", [])),
                       "skills": list(document.get("skills", []))})


class LLMProposer:
    """``propose`` with stage 1 asked of the endpoint; counts tokens and unusable answers."""

    def __init__(self, config: EvolveConfig) -> None:
        self.config, self.tokens, self.unusable = config, 0, 0
        self.refused: list[tuple[str, NoLLMEdit]] = []
        """(the target skill, why) of every answer it could not use, for the round's
        ``llm_unusable`` candidates (``llm_edit.unusable_row``)."""

    def __call__(self, stage: int, state: State, memory: Memory, failures: Sequence[Failure], catalogue: Mapping,
                 stats: Mapping, k: int, max_pool: int, rng: random.Random) -> Edit | None:
        if stage == 1 and failures:
            target = rng.choice(sorted({s for f in failures for s in f.loaded if s in state.pool}) or sorted(state.pool))
            bundle = state.pool[target]
            involved = [f for f in failures if target in f.loaded]
            try:
                document, call = edited_harness(target, harness_source(as_document(bundle)),
                                                skill_brief(involved, memory), self.config, rng)
                self.tokens += (call.tokens_in or 0) + (call.tokens_out or 0)
                edited = bundle_of(document, bundle["name"])
                return Edit(1, OPERATOR, target, f"{bundle['summary']} -> {edited['summary']}",
                            replace_skill(state, target, edited), (target,))
            except NoLLMEdit as reason:
                self.unusable += 1
                self.refused.append((target, reason))
                call = reason.proposal
                self.tokens += 0 if call is None else (call.tokens_in or 0) + (call.tokens_out or 0)
        return propose(stage, state, memory, failures, catalogue, stats, k, max_pool, rng)
