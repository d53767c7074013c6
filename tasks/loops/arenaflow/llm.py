"""ArenaFlow's `proposer: llm` path: the chat endpoint is the judge (prompt
``tasks/proposers/prompts/arenaflow_judge.txt``): request + two trajectories + the
retrieved skills -> winner, key step indices, a reusable experience text and the skills
used in key steps. Offline the honest default is the rule comparator
(``arena.compare``). An answer that is not the JSON asked for, or names a step that is
no state change of the winner, is not trusted: the rule comparator's verdict stands for
that match, the match records why (``af_matches.judged_by``) and the judge counts it
(``unusable``), so a bad answer never fails the run; so does a call that got no answer
(a timeout, an HTTP error).
Deviations: the judge's winner and key steps are used; the skills used at those steps
are read from the winner's trace (which rules fired up to them), not from the answer's
``skill_ids``, and the library's skill text is the option's own (``menu.OPTIONS``), not
the answer's ``experience``."""

from __future__ import annotations

import json
import os
import string
from dataclasses import replace
from typing import Sequence

from schemas.configs import EvolveConfig
from tasks.loops.arenaflow.arena import Judge, Match, Trajectory, compare, state_changing, used_options
from tasks.proposers.llm import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, UNAVAILABLE, chat_completion, load_prompt
from tasks.proposers import ProposerUnavailable
from tasks.proposers.base import ProposerError
from tasks.runtime.context import RunRef, run_config

PROMPT = "arenaflow_judge.txt"


def render(t: Trajectory) -> str:
    return "\n".join(f"{i}. {s['kind']} {s['name']} {s['args_json']} ok={s['ok']}" for i, s in enumerate(t.steps))


class UnusableVerdict(ValueError):
    """The judge's answer is not the verdict asked for; the message says why."""


def parse_verdict(text: str, a: Trajectory, b: Trajectory, round_: int, option_ids: Sequence[str]) -> Match:
    """The judge's answer as a match; raises UnusableVerdict saying why it is not usable."""
    try:
        answer = json.loads(text.strip().removeprefix("```json").removesuffix("```"))
    except ValueError:
        raise UnusableVerdict("the answer is not JSON") from None
    if not isinstance(answer, dict) or answer.get("winner") not in ("A", "B"):
        raise UnusableVerdict("the answer names no winner A or B")
    winner = {"A": a, "B": b}[answer["winner"]]
    try:
        keys = tuple(int(i) for i in answer.get("key_steps", []))
    except (ValueError, TypeError):
        raise UnusableVerdict("key_steps is not a list of step numbers") from None
    bad = [i for i in keys if not 0 <= i < len(winner.steps) or not state_changing(winner.steps[i])]
    if bad:
        raise UnusableVerdict(f"key steps {bad} are no state change of the winner's {len(winner.steps)} steps")
    return Match(f"{a.traj_id}:{b.traj_id}", a.traj_id, b.traj_id, winner.traj_id, round_, keys,
                 {i: used_options(winner, i, option_ids) for i in keys}, judged_by="llm")


class LLMJudge:
    def __init__(self, config: EvolveConfig, request: str = "", skills: str = "(none)") -> None:
        self.base_url, self.model = os.environ.get(ENV_BASE_URL), os.environ.get(ENV_MODEL)
        if not self.base_url or not self.model:
            raise ProposerUnavailable(UNAVAILABLE)
        self.config, self.request, self.skills = config, request, skills
        self.template = string.Template(load_prompt(PROMPT))
        self.tokens, self.calls, self.unusable = 0, 0, 0

    def for_request(self, request: str, skills: str) -> "LLMJudge":
        """This judge (its counters shared) shown one request and its retrieved skills."""
        judge = object.__new__(LLMJudge)
        judge.__dict__.update(self.__dict__)
        judge.request, judge.skills, judge.parent = request, skills, self
        return judge

    def __call__(self, a: Trajectory, b: Trajectory, round_: int, option_ids: Sequence[str]) -> Match:
        prompt = self.template.safe_substitute(template="toolsim", request=self.request, a=render(a), b=render(b),
                                               skills=self.skills)
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "max_tokens": self.config.llm_max_tokens, "temperature": 0.0}
        counter = getattr(self, "parent", self)
        counter.calls += 1
        try:
            answer = chat_completion(self.base_url, body, api_key=os.environ.get(ENV_API_KEY),
                                     timeout_s=self.config.llm_timeout_s)
            counter.tokens += (answer.tokens_in or 0) + (answer.tokens_out or 0)
            return parse_verdict(answer.text, a, b, round_, option_ids)
        except (UnusableVerdict, ProposerError) as why:  # no answer (timeout, HTTP error) is data too
            counter.unusable += 1
            kind = "answer unusable" if isinstance(why, UnusableVerdict) else "call failed"
            return replace(compare(a, b, round_, option_ids), judged_by=f"rule (llm {kind}: {str(why)[:300]})")


def judge_for(ref: RunRef) -> Judge:
    """The rule comparator, or the LLM judge under `proposer: llm`."""
    config = run_config(ref)
    return LLMJudge(config.evolve) if config.proposer == "llm" else compare
