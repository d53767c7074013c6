"""prior_or_feedback's `proposer: llm` path: the chat endpoint replaces the rule-based
prior proposer (prompt ``tasks/proposers/prompts/prior_or_feedback_config.txt``): task text
(the PDE family and coefficient of source and target), the config schema (CONFIG_SPACE)
and the history table -> one JSON config. Every call has the same sampling settings
(temperature 0, the request seed from the search seed and trial), so an intervention is
a prompt edit: (c) the history's scores permuted, (d) the spec's notation control, the
same scores written in scientific notation. An answer that is not a valid config is
data, not an error: the trial (or replay) records the reason in ``proposal_error`` and
the rule-based prior's proposal stands for it, so one bad answer never fails the run."""

from __future__ import annotations

import json
import os
import string

from schemas.configs import EvolveConfig
from schemas.ids import derived_id
from suites.pde1d.space import CONFIG_SPACE, validate_config
from tasks.loops.prior_or_feedback.proposers import History, propose
from tasks.proposers import ProposerUnavailable
from tasks.proposers.base import ProposerError
from tasks.proposers.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, UNAVAILABLE, chat_completion, load_prompt

PROMPT = "prior_or_feedback_config.txt"


def task_text(task: dict) -> str:
    (sf, sc), (tf, tc) = task["source"], task["target"]
    coef = {"burgers": "viscosity nu", "advection": "velocity a"}
    return (f"source: {sf} equation, {coef.get(sf, 'coefficient')} = {sc:g}; target: {tf} equation, "
            f"{coef.get(tf, 'coefficient')} = {tc:g}")


def schema_text() -> str:
    lines = []
    for param, kind, bounds in CONFIG_SPACE:
        if kind == "categorical":
            lines.append(f"- {param}: one of {json.dumps(list(bounds))}")
        else:
            scale = " (log scale)" if kind == "float-log" else ""
            lines.append(f"- {param}: {'integer' if kind == 'int' else 'number'} in [{bounds[0]:g}, {bounds[1]:g}]{scale}")
    return "\n".join(lines)


def history_text(history: History, notation: str = ".6f") -> str:
    if not history:
        return "(none yet)"
    return "\n".join(f"{t} | {json.dumps(c, sort_keys=True)} | {format(v, notation)}"
                     for t, (c, v) in enumerate(history, 1))


def render(task: dict, history: History, t: int, trials: int, notation: str = ".6f") -> str:
    return string.Template(load_prompt(PROMPT)).substitute(
        trials=trials, t=t, task=task_text(task), schema=schema_text(), history=history_text(history, notation))


def parse_config(text: str) -> tuple[dict | None, str]:
    """(config, "") from an answer, or (None, why it is not a valid config)."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        config = json.loads(body)
    except ValueError as error:
        return None, f"not JSON: {error}"
    if isinstance(config, dict):
        extra = sorted(set(config) - {p for p, _, _ in CONFIG_SPACE})
        if extra:
            return None, f"unknown fields {extra}"
    why = validate_config(config)
    return (None, why) if why else (config, "")


class LLMConfigProposer:
    """A proposer of the protocol: (task, history, seed, t, startup) -> (config, error)."""

    def __init__(self, config: EvolveConfig, trials: int) -> None:
        self.base_url, self.model = os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL)
        if not self.base_url or not self.model:
            raise ProposerUnavailable(UNAVAILABLE)
        self.config, self.trials = config, trials

    def __call__(self, task: dict, history: History, seed: object, t: int, startup: int,
                 notation: str = ".6f") -> tuple[dict, str]:
        body = {"model": self.model, "temperature": 0.0, "max_tokens": self.config.llm_max_tokens,
                "seed": int(derived_id(seed, "llm", t)[:8], 16),
                "messages": [{"role": "user", "content": render(task, history, t, self.trials, notation)}]}
        try:
            answer = chat_completion(self.base_url, body, api_key=os.environ.get(ENV_API_KEY),
                                     timeout_s=self.config.llm_timeout_s).text
        except ProposerError as error:  # a failed call is data too: the prior's proposal stands
            answer, error_text = None, f"call failed: {error}"
        config, why = parse_config(answer) if answer is not None else (None, error_text)
        return (config, "") if config is not None else (propose("prior", task, history, seed, t, startup), why)

    def control(self, task: dict, history: History, seed: object, t: int, startup: int, k: int) -> tuple[dict, str]:
        """(d) the notation control: the same scores in scientific notation, same sampling."""
        return self(task, history, seed, t, startup, notation=".3e")
