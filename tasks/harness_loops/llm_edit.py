"""What the harness loops' `proposer: llm` paths share: a prompt file from
``tasks/proposers/prompts/``, one chat round that must return an edited harness program
whose ``harness()`` is a literal, valid document, and the exception that says why an
answer is no edit. Offline (no RATCHET_LLM_* endpoint) the loops use the rule proposer
and this is never called."""

from __future__ import annotations

import json
import random
from typing import Any

from schemas.configs import EvolveConfig
from schemas.rows import CandidateRow
from suites.toolsim.harness import HarnessError, parse_harness
from tasks.harness_loops.documents import literal_document
from tasks.proposers import DiffError, LLMProposer, ParentInfo, Proposal
from tasks.proposers.llm import ANSWER_KIND, UNUSABLE, call_cost, cost_note, load_prompt
from tasks.runtime.context import RunRef, store_for


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
    """(document, the call: its summary, raw answer, tokens, latency) of the harness program
    the endpoint returned as an edit of the parent; raises NoLLMEdit (with the call) when it
    is not one literal, valid harness."""
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


def costed_summary(ref: RunRef, call: Proposal, detail: str = "") -> str:
    """A usable answer's summary (then ``detail``) ending with its raw answer's blob
    (``cost_note``), as evolve's llm candidates carry it; the call's tokens and seconds go
    in the candidate's columns (``call_cost``)."""
    store = store_for(ref.store_uri)
    return call.summary + detail + cost_note(call, store.blob_uri(store.put_blob((call.answer or "").encode())))


def unusable_row(ref: RunRef, round_index: int, parent_id: str, reason: NoLLMEdit) -> CandidateRow:
    """The record of a round whose llm answer gave no edit: operator ``llm_unusable``, kind
    ``llm_answer``, never executed; its blob holds the reason and the raw answer
    (as tasks/stages/sample.py records evolve's), the summary ends with the answer's own
    blob (``cost_note``) and the call's tokens and seconds are its columns."""
    store, call = store_for(ref.store_uri), reason.proposal
    record = {"parent_id": parent_id, "round": round_index, "reason": str(reason),
              "answer": None if call is None else call.answer}
    blob = store.put_blob(json.dumps(record, indent=1).encode())
    answered = call is not None and call.answer is not None
    cost = cost_note(call, store.blob_uri(store.put_blob(call.answer.encode()))) if answered else ""
    return CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[parent_id], operator=UNUSABLE,
        proposer="llm", artifact_kind=ANSWER_KIND, artifact_uri=store.blob_uri(blob), island=-1,
        summary=f"{UNUSABLE}: {str(reason)[:300]}{cost}", **call_cost(call),
    )


def is_unusable(row: CandidateRow) -> bool:
    """Whether a candidate row records an llm answer that gave no edit (never executed)."""
    return row.artifact_kind == ANSWER_KIND
