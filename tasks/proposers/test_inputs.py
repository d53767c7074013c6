"""The test-input writer behind `proposer: llm` of the loops that grade code by running it
(codemidas, cover): the chat endpoint reads a function's spec (signature and docstring)
and the parameter types it accepts, and answers with argument lists. Each loop has its
prompt file in ``tasks/proposers/prompts/`` (``codemidas_inputs.txt``,
``cover_inputs.txt``). Expected outcomes are never the model's: programs are run on the
inputs in the sandbox, as on the fuzz inputs.

Offline (no RATCHET_LLM_* endpoint) the default, the type-driven fuzzer, writes the
inputs and this module is never called; with `proposer: llm` and no endpoint the run
stops and says so. An answer with no usable argument list adds no inputs; the loop
records the reason and goes on with the fuzz inputs."""

from __future__ import annotations

import json
import os
import random
from typing import Any, Mapping, Sequence

from schemas.configs import EvolveConfig
from tasks.proposers.llm import (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, UNAVAILABLE, ChatAnswer,
                                 TerminalProposerError, TransientProposerError, chat_completion, load_prompt)

PROMPT = "codemidas_inputs.txt"


def brief(spec: str, kinds: Sequence[str], count: int, prompt: str = PROMPT) -> str:
    return load_prompt(prompt).rstrip("\n").format(spec=spec, kinds=", ".join(kinds), count=count)


def parse_arguments(text: str, arity: int, count: int) -> tuple[list[list[Any]], str | None]:
    """The argument lists of an answer (the first JSON array in it): those with ``arity``
    values, at most ``count``, without duplicates; and why none, when none."""
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end < start:
        return [], "the answer holds no JSON array"
    try:
        value = json.loads(text[start:end + 1])
    except json.JSONDecodeError as error:
        return [], f"the answer's array is not JSON: {error.msg}"
    if not isinstance(value, list):
        return [], "the answer is not a list of argument lists"
    out, seen = [], set()
    for args in value:
        key = json.dumps(args, sort_keys=True)
        if isinstance(args, list) and len(args) == arity and key not in seen:
            seen.add(key)
            out.append(args)
    return out[:count], None if out else f"no argument list of {arity} values in the answer"


def llm_arguments(spec: str, kinds: Sequence[str], count: int, config: EvolveConfig, rng: random.Random,
                  env: Mapping[str, str] | None = None,
                  prompt: str = PROMPT) -> tuple[list[list[Any]], str | None, ChatAnswer]:
    """(argument lists, why none, the answer) the endpoint wrote for one function, asked
    with the prompt file ``prompt``."""
    env = os.environ if env is None else env
    base_url, model = env.get(ENV_BASE_URL), env.get(ENV_MODEL)
    if not base_url or not model:
        raise ValueError(UNAVAILABLE)
    body = {"model": model, "messages": [{"role": "user", "content": brief(spec, kinds, count, prompt)}],
            "temperature": 0.8, "max_tokens": config.llm_max_tokens, "seed": rng.randrange(2**31)}
    try:
        answer = chat_completion(base_url, body, api_key=env.get(ENV_API_KEY), timeout_s=config.llm_timeout_s)
    except (TransientProposerError, TerminalProposerError) as error:
        return [], f"no answer: {error}", ChatAnswer("")
    args, why = parse_arguments(answer.text, len(kinds), count)
    return args, why, answer
