"""The `llm` proposer: asks any OpenAI-compatible chat endpoint for an edit of the parent
program, as SEARCH/REPLACE blocks or a whole fenced program (DESIGN.md, "Proposers").

The endpoint is injected through the environment and never defaulted in code:
``RATCHET_LLM_BASE_URL`` (e.g. http://127.0.0.1:8000/v1), ``RATCHET_LLM_MODEL`` and,
when the endpoint wants one, ``RATCHET_LLM_API_KEY`` (sent as a bearer token). HTTP uses
the standard library, so the proposer adds no dependency. Errors are split for the
caller's retry policy: 408, 429, 5xx, connection failures and timeouts raise
``TransientProposerError``; other HTTP errors and malformed responses raise
``TerminalProposerError``. ``LLMProposer.propose`` turns both, and an answer that
yields no new parsing program (``DiffError``), into an *unusable* proposal: a recorded
candidate that is never executed, so one bad answer never fails the round. Tokens (the
endpoint's ``usage``) and latency of every call travel with the proposal.

Prompts are data files under ``prompts/`` (``string.Template`` syntax). Only the first
parent is shown to the model; the child's ``parent_ids`` says so. The rng supplies the
request's ``seed``, which endpoints that honour it use for reproducible sampling.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import string
import time
import urllib.error
import urllib.request
from collections import Counter
from importlib.resources import files
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from tasks.proposers.base import (
    FailureMemoryItem,
    ParentInfo,
    Proposal,
    ProposerUnavailable,
    TerminalProposerError,
    TransientProposerError,
    effective_failure_memory,
)
from tasks.proposers.diff import DiffError, apply_diff_blocks, parse_diff_blocks, program_from_response

__all__ = [
    "LLMProposer",
    "DiffError",
    "apply_diff_blocks",
    "parse_diff_blocks",
    "program_from_response",
    "ChatAnswer",
    "call_cost",
    "cost_note",
    "chat_completion",
    "render_user_prompt",
]

ENV_BASE_URL = "RATCHET_LLM_BASE_URL"
ENV_MODEL = "RATCHET_LLM_MODEL"
ENV_API_KEY = "RATCHET_LLM_API_KEY"
UNAVAILABLE = (
    "the llm proposer needs RATCHET_LLM_BASE_URL and RATCHET_LLM_MODEL; "
    "set them to an OpenAI-compatible endpoint, or use --proposer mutate"
)
TRANSIENT_STATUS = frozenset({408, 429})
UNUSABLE = "llm_unusable"
"""The operator of a candidate whose answer gave no program; its artifact kind is ``llm_answer``."""
ANSWER_KIND = "llm_answer"


def load_prompt(name: str) -> str:
    """A packaged prompt file from ``tasks/proposers/prompts/``."""
    return files("tasks.proposers").joinpath("prompts", name).read_text("utf-8")


@dataclass(frozen=True)
class ChatAnswer:
    """The first choice of a chat completion and what it cost."""

    text: str
    tokens_in: int | None = None
    tokens_out: int | None = None
    finish_reason: str | None = None


def chat_completion(
    base_url: str,
    body: Mapping[str, Any],
    *,
    api_key: str | None,
    timeout_s: float,
) -> ChatAnswer:
    """POST ``body`` to ``{base_url}/chat/completions``; the first choice's message text."""
    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
    except urllib.error.HTTPError as error:
        detail = error.read()[:500].decode("utf-8", errors="replace")
        message = f"{url} answered HTTP {error.code}: {detail}"
        if error.code in TRANSIENT_STATUS or error.code >= 500:
            raise TransientProposerError(message) from error
        raise TerminalProposerError(message) from error
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError) as error:
        reason = getattr(error, "reason", error)
        raise TransientProposerError(f"could not get an answer from {url}: {reason}") from error
    return _answer(raw, url)


def _answer(raw: bytes, url: str) -> ChatAnswer:
    try:
        payload = json.loads(raw)
        choice = payload["choices"][0]
        content = choice["message"]["content"]
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise TerminalProposerError(f"{url} answered with something that is not JSON: {raw[:200]!r}") from error
    except (KeyError, IndexError, TypeError) as error:
        raise TerminalProposerError(
            f"{url} answered JSON without choices[0].message.content: {raw[:200]!r}"
        ) from error
    if not isinstance(content, str):
        raise TerminalProposerError(f"{url} answered a non-text message content: {content!r}")
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    return ChatAnswer(content, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")),
                      choice.get("finish_reason") if isinstance(choice, dict) else None)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def cost_note(proposal: Proposal, answer_uri: str | None) -> str:
    """The suffix of an LLM-written candidate's summary: ``| answer=URI``, the blob of the
    raw answer; "" when there was no call. The call's tokens and seconds are columns of
    the candidate (``call_cost``), not text."""
    return "" if answer_uri is None else f" | answer={answer_uri}"


def call_cost(proposal: Proposal | None) -> dict[str, int | float | None]:
    """The ``tokens_in``/``tokens_out``/``latency_s`` columns of the candidate a proposal
    becomes (all None when no model was called)."""
    if proposal is None:
        return {"tokens_in": None, "tokens_out": None, "latency_s": None}
    return {"tokens_in": proposal.tokens_in, "tokens_out": proposal.tokens_out, "latency_s": proposal.latency_s}


def _bullets(lines: Sequence[str]) -> str:
    return "; ".join(lines) if lines else "none"


def render_user_prompt(
    template: string.Template,
    parent: ParentInfo,
    failure_memory: Sequence[FailureMemoryItem],
    task_description: str,
    entrypoint: str,
) -> str:
    """The user message for one parent; every placeholder must be filled."""
    errors = Counter(parent.errors)
    return template.substitute(
        task_description=task_description or "Improve the program.",
        entrypoint=entrypoint or "the same functions",
        parent_score="not scored yet" if parent.score is None else f"{parent.score:.6g}",
        parent_source=parent.source.rstrip("\n"),
        parent_errors=_bullets([f"{kind} ({count}x)" for kind, count in errors.items()]),
        failure_memory=_bullets(
            [f"{item.operator} edits led to {item.error_kind} ({item.support}x)" for item in failure_memory]
        ),
    )


def _explanation(text: str) -> str:
    """The first line of prose before any edit, for the candidate's summary."""
    for line in text.replace("\r\n", "\n").split("\n"):
        stripped = line.strip()
        if stripped.startswith(("<<<<<<<", "```")):
            break
        if stripped:
            return stripped if len(stripped) <= 120 else stripped[:117] + "..."
    return "(no explanation)"


class LLMProposer:
    """Edits proposed by a chat model behind an OpenAI-compatible endpoint."""

    name = "llm"

    def __init__(
        self,
        config: EvolveConfig,
        *,
        task_description: str = "",
        entrypoint: str = "",
        env: Mapping[str, str] | None = None,
        temperature: float = 0.8,
        user_prompt: str = "evolve_user.txt",
    ) -> None:
        env = os.environ if env is None else env
        self.config = config
        self.task_description = task_description
        self.entrypoint = entrypoint
        self.base_url = env.get(ENV_BASE_URL) or None
        self.model = env.get(ENV_MODEL) or None
        self.api_key = env.get(ENV_API_KEY) or None
        self.timeout_s = config.llm_timeout_s
        self.max_tokens = config.llm_max_tokens
        self.temperature = temperature
        self.system_prompt = load_prompt("system.txt")
        self.user_template = string.Template(load_prompt(user_prompt))
        """The user message's template (a file in ``prompts/`` with the same placeholders)."""

    def available(self) -> tuple[bool, str]:
        if self.base_url is None or self.model is None:
            return False, UNAVAILABLE
        return True, f"llm proposer: model {self.model} at {self.base_url}"

    def propose(
        self,
        parents: Sequence[ParentInfo],
        rng: random.Random,
        failure_memory: Sequence[FailureMemoryItem] = (),
    ) -> Proposal:
        """One edit of ``parents[0]``, or an unusable proposal that says why the model's
        answer (or the lack of one) gives none."""
        if self.base_url is None or self.model is None:
            raise ProposerUnavailable(UNAVAILABLE)
        if not parents:
            raise ValueError("propose needs at least one parent; got none")
        parent = parents[0]
        memory = effective_failure_memory(failure_memory, self.config.failure_memory, self.config.failure_min_support)
        user = render_user_prompt(self.user_template, parent, memory, self.task_description, self.entrypoint)
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user}],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": rng.randrange(2**31),
        }
        started = time.monotonic()
        try:
            reply = chat_completion(self.base_url, body, api_key=self.api_key, timeout_s=self.timeout_s)
        except (TransientProposerError, TerminalProposerError) as error:
            return self._unusable(parent, body["seed"], f"no answer: {error}", ChatAnswer(""), started)
        try:
            child, mode = program_from_response(parent.source, reply.text, self.entrypoint)
        except DiffError as error:
            cut = f" (cut off at max_tokens={self.max_tokens})" if reply.finish_reason == "length" else ""
            return self._unusable(parent, body["seed"], f"{error}{cut}", reply, started)
        return Proposal(
            source=child, operator=f"llm_{mode}", parent_ids=(parent.candidate_id,), proposer=self.name,
            summary=f"llm_{mode} by {self.model}: {_explanation(reply.text)}", answer=reply.text,
            tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, latency_s=time.monotonic() - started,
        )

    def _unusable(self, parent: ParentInfo, seed: int, reason: str, reply: ChatAnswer, started: float) -> Proposal:
        """The record of an answer that gives no program: the parent, the request's seed
        (so two failed calls never share a content id), the reason and the raw answer."""
        record = {"parent_id": parent.candidate_id, "model": self.model, "seed": seed, "reason": reason,
                  "answer": reply.text}
        return Proposal(
            source=json.dumps(record, indent=1), operator=UNUSABLE, parent_ids=(parent.candidate_id,),
            proposer=self.name, summary=f"{UNUSABLE} by {self.model}: {reason[:300]}", unusable=reason,
            answer=reply.text, tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
            latency_s=time.monotonic() - started,
        )
