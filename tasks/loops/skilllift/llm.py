"""SkillLift's inner reviser behind `proposer: llm`: the chat endpoint reads only the
skill (the champion-line harness program) and the frozen rubric, never a run, and
returns a revised skill (``tasks/proposers/prompts/skilllift_revise.txt``). The rubric
still scores the revision with its static checks (no model scores items here: the
paper's inner scorer is the rubric itself). An answer that is no valid harness is no
proposal: the inner step counts it and goes on (``NoLLMEdit``); the round records it as
an ``llm_unusable`` candidate with its reason, raw answer and tokens (``refused_rows``).
Offline (no RATCHET_LLM_* endpoint) the loop's default, the catalogue mutations
(``inner.rule_reviser``), revises the skills and this module is never called."""

from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from schemas.rows import CandidateRow
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit, brief, edited_harness, unusable_row
from tasks.loops.skilllift.inner import Reviser, skill_id
from tasks.runtime.context import RunRef

OPERATOR = "llm_revise"
PROMPT = "skilllift_revise.txt"


def rubric_brief(rubric: Sequence[Mapping[str, Any]]) -> str:
    lines = [f"- {item['id']} ({item['weight']:+.3f}): {item.get('note', item['kind'])}" for item in rubric]
    return brief(PROMPT, rubric="\n".join(lines))


class LLMReviser:
    """A ``Reviser`` that asks the endpoint once per proposal; it keeps the calls'
    token counts (the cost table's framework tokens) and the unusable answers."""

    def __init__(self, rubric: Sequence[Mapping[str, Any]], config: EvolveConfig) -> None:
        self.description, self.config = rubric_brief(rubric), config
        self.tokens, self.calls, self.unusable = 0, 0, 0
        self.refused: list[tuple[str, NoLLMEdit]] = []
        """(the revised skill's id, why) of every answer it could not use, for the
        round's ``llm_unusable`` candidates (``llm_edit.unusable_row``)."""

    def __call__(self, document: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], str] | None:
        self.calls += 1
        try:
            revised, call = edited_harness(skill_id(document), harness_source(document), self.description,
                                           self.config, rng)
        except NoLLMEdit as reason:
            self.unusable += 1
            self.refused.append((skill_id(document), reason))
            self.tokens += _tokens(reason.proposal)
            return None
        self.tokens += _tokens(call)
        return revised, OPERATOR


def _tokens(call) -> int:
    return 0 if call is None else (call.tokens_in or 0) + (call.tokens_out or 0)


def refused_rows(ref: RunRef, round_index: int, revise: Reviser) -> list[CandidateRow]:
    """The ``llm_unusable`` candidates of the answers a reviser could not use (reason, raw
    answer, tokens; never executed), one per distinct record; none for the non-LLM one."""
    rows = (unusable_row(ref, round_index, parent, why) for parent, why in getattr(revise, "refused", []))
    return list({r.candidate_id: r for r in rows}.values())


def reviser_tokens(revise: Reviser) -> int:
    """The framework tokens a reviser spent (0 for the non-LLM one)."""
    return revise.tokens if isinstance(revise, LLMReviser) else 0
