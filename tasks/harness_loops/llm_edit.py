"""What the harness loops' `proposer: llm` paths share: a prompt file from
``tasks/proposers/prompts/``, one chat round that must return an edited harness program
whose ``harness()`` is a literal, valid document, and the exception that says why an
answer is no edit. Offline (no RATCHET_LLM_* endpoint) the loops use the rule proposer
and this is never called."""

from __future__ import annotations

import random
from typing import Any

from schemas.configs import EvolveConfig
from suites.toolsim.harness import HarnessError, parse_harness
from tasks.harness_loops.documents import literal_document
from tasks.proposers import DiffError, LLMProposer, ParentInfo, Proposal
from tasks.proposers.llm import load_prompt


class NoLLMEdit(ValueError):
    """The endpoint's answer (or the evidence) gives no edit; the message says why, for
    the round's record. A normal outcome of proposing, like ``NoRuleEvidence``.
    ``asked``: whether the model was asked (its failure, worth recording) rather than the
    evidence giving nothing to ask for; ``proposal``: its call (raw answer, tokens,
    latency) when the caller has it."""

    def __init__(self, message: str, proposal: Proposal | None = None, *, asked: bool = False) -> None:
        super().__init__(message)
        self.proposal = proposal
        self.asked = asked or proposal is not None


def brief(prompt_file: str, **fields: Any) -> str:
    """The task description: a packaged prompt file with its fields filled in. The file
    ends with a newline that the literal briefs did not have; it is stripped."""
    return load_prompt(prompt_file).rstrip("\n").format(**fields)


def edited_harness(parent_id: str, parent_source: str, description: str, config: EvolveConfig,
                   rng: random.Random) -> tuple[dict[str, Any], Proposal]:
    """(document, the answer: its summary and its call's cost) of the harness program the
    endpoint returned as an edit of the parent; raises NoLLMEdit when it is not one
    literal, valid harness."""
    proposer = LLMProposer(config, task_description=description, entrypoint="harness")
    answer = proposer.propose([ParentInfo(parent_id, parent_source, None)], rng)
    try:
        if answer.unusable is not None:
            raise DiffError(answer.unusable)
        document = literal_document(answer.source)
        parse_harness(document)
    except (DiffError, ValueError, HarnessError) as exc:  # HarnessError is a ValueError; named for the reader
        raise NoLLMEdit(f"the llm's answer is not a valid harness: {exc}", answer) from exc
    return document, answer
