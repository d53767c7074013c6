"""MASS's `proposer: llm` path: the chat endpoint is the workflow optimizer (prompt
``tasks/proposers/prompts/mass_optimizer.txt``): workflow + feedback from its train runs
-> a revised workflow. Offline the honest default is the seeded mutation operators
(``workflow.children``). An answer that is not the JSON asked for or breaks a
structural constraint is not trusted: that child comes from a seeded operator instead,
and the optimizer counts it (``unusable``) and keeps it (``refused``: the generation's
``llm_unusable`` candidates), so a bad answer (or none: a timeout, an HTTP error) never
fails the run. The executor and the judge stay ours in both paths (a
stated deviation: the paper's model also executes and judges)."""

from __future__ import annotations

import json
import os
import random
import string
import time
from collections import defaultdict
from statistics import fmean
from typing import Sequence

from schemas.configs import EvolveConfig
from schemas.ids import seed_for
from schemas.rows import CandidateRow
from tasks.harness_loops.llm_edit import NoLLMEdit, unusable_row
from tasks.harness_loops.menu import option_text
from tasks.loops.mass.loop import Execution
from tasks.loops.mass.workflow import FIELDS, WORKERS, Workflow, children
from tasks.proposers import ProposerUnavailable
from tasks.proposers.base import Proposal, ProposerError
from tasks.proposers.llm import (ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, UNAVAILABLE, UNUSABLE, chat_completion,
                                 load_prompt)
from tasks.runtime.context import RunRef

PROMPT = "mass_optimizer.txt"
UNUSABLE_WHY = "the answer is no JSON workflow of known roles and fields within max_roles"


def feedback(runs: Sequence[Execution]) -> str:
    by: dict[str, list[Execution]] = defaultdict(list)
    for e in runs:
        by[e.template].append(e)
    return "\n".join(f"{t}: {sum(e.success for e in es)}/{len(es)}, {fmean(e.calls for e in es):.1f} calls"
                     for t, es in sorted(by.items()))


def parse_workflow(text: str, max_roles: int) -> Workflow | None:
    """The optimizer's answer as a workflow, or None when it is not usable."""
    try:
        answer = json.loads(text.strip().removeprefix("```json").removesuffix("```"))
        wf = Workflow(tuple(answer["workers"]), tuple(answer["returns"]))
    except (ValueError, KeyError, TypeError):
        return None
    return wf if len(wf.workers) <= max_roles else None


class RuleOptimizer:
    """The offline optimizer: ``n`` seeded mutations of the parent."""

    author = "rules"

    def __init__(self, seed: int, n: int, max_roles: int) -> None:
        self.seed, self.n, self.max_roles = seed, n, max_roles

    def __call__(self, parent: Workflow, runs: Sequence[Execution], gen: int) -> list[tuple[str, Workflow]]:
        return children(parent, self.n, self.max_roles, random.Random(seed_for(self.seed, "mass-children", gen)))


class LLMOptimizer(RuleOptimizer):
    def __init__(self, config: EvolveConfig, seed: int, n: int, max_roles: int) -> None:
        super().__init__(seed, n, max_roles)
        self.base_url, self.model = os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL)
        if not self.base_url or not self.model:
            raise ProposerUnavailable(UNAVAILABLE)
        self.config, self.author = config, self.model
        self.template = string.Template(load_prompt(PROMPT))
        self.tokens, self.calls, self.unusable = 0, 0, 0
        self.refused: list[tuple[str, NoLLMEdit]] = []
        """(the parent workflow's id, why) of every answer it could not use, with the call,
        for the generation's ``llm_unusable`` candidates (``llm_edit.unusable_row``)."""

    def __call__(self, parent: Workflow, runs: Sequence[Execution], gen: int) -> list[tuple[str, Workflow]]:
        fallback = super().__call__(parent, runs, gen)
        workers = "\n".join(f"{w.role}: {option_text(w.option)}; needs {w.needs}" for w in WORKERS.values())
        prompt = self.template.safe_substitute(workers=workers, fields=", ".join(FIELDS), max_roles=self.max_roles,
                                               workflow=parent.spec_json(), feedback=feedback(runs))
        out = []
        for i in range(self.n):
            body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                    "max_tokens": self.config.llm_max_tokens, "temperature": 1.0 if i else 0.0}
            wf = self._ask(body, parent.wf_id)
            out.append(("llm_edit", wf) if wf is not None else fallback[i])
        return out

    def _ask(self, body: dict, parent_id: str) -> Workflow | None:
        """One call: its workflow, or None (counted, and kept with why in ``refused``)."""
        self.calls += 1
        started, answer, why = time.monotonic(), None, UNUSABLE_WHY
        try:
            answer = chat_completion(self.base_url, body, api_key=os.environ.get(ENV_API_KEY),
                                     timeout_s=self.config.llm_timeout_s)
        except ProposerError as error:  # no answer (a timeout, an HTTP error): that child's operator stands
            why = f"no answer: {error}"
        if answer is not None:
            self.tokens += (answer.tokens_in or 0) + (answer.tokens_out or 0)
        wf = None if answer is None else parse_workflow(answer.text, self.max_roles)
        if wf is None:
            self.unusable += 1
            call = Proposal("", UNUSABLE, (parent_id,), "llm", why, unusable=why,
                            answer=None if answer is None else answer.text,
                            tokens_in=None if answer is None else answer.tokens_in,
                            tokens_out=None if answer is None else answer.tokens_out,
                            latency_s=time.monotonic() - started)
            self.refused.append((parent_id, NoLLMEdit(why, call)))
        return wf


def refused_rows(ref: RunRef, gen: int, optimizer: RuleOptimizer) -> list[CandidateRow]:
    """The ``llm_unusable`` candidates of the answers an optimizer could not use (reason,
    raw answer, tokens; never run), one per distinct record; none for the rule one."""
    rows = (unusable_row(ref, gen, parent, why) for parent, why in getattr(optimizer, "refused", []))
    return list({r.candidate_id: r for r in rows}.values())
