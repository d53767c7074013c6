"""The REFIT protocol on one toolsim task, as pure functions: the initial attempt, one
feedback document per method from that same trajectory, and the retry in a fresh
environment (the world rebuilt from its seed: every file recreated) with only the
feedback carried over.

Noise: the initial attempt of repeat ``r`` and every method's retry of repeat ``r`` draw
their event-keyed faults from two seeds derived from (run seed, task, repeat, phase), so
every method's retry meets exactly the same faults (a paired comparison), and the retry
never replays the initial attempt's faults.

Deviations from the paper (toolsim's instance, ``[impl]`` in the spec): the feedback
writer is ``tree.py``'s rules (or the chat endpoint under ``proposer: llm``), not Gemini;
the receiver is toolsim's procedural agent adapting its harness (``receiver.py``), not an
LLM; "tokens" are the words of the feedback document it reads (``feedback.tokens``) and
the cost the paper reports as retry tokens is counted here as retry tool calls.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from suites.base import Case
from suites.toolsim.episode import Episode, run_episode
from suites.toolsim.harness import load_harness
from suites.toolsim.seeding import derive_seed
from suites.toolsim.suite import reseeded
from tasks.loops.dense.feedback import tokens, unlabelled_feedback
from tasks.loops.dense.receiver import labelled, receive, skill_name, starter_harness
from tasks.proposers.rule_evidence import trace_of

RECEIVER = "procedural"
"""toolsim's frozen procedural agent (``suites.toolsim.agent``)."""
TreeWriter = Callable[[str, Case, Episode], dict[str, Any]]
"""(method, case, initial episode) -> a feedback document: the non-LLM writer or the LLM's."""


def phase_case(case: Case, seed: int, repeat: int, phase: str) -> Case:
    return reseeded(case, derive_seed(seed, "dense", phase, case.case_id, repeat))


def initial_attempt(case: Case, seed: int, repeat: int) -> Episode:
    """The initial attempt under the starter harness."""
    return run_episode(phase_case(case, seed, repeat, "initial").payload, load_harness(starter_harness()))


def rule_writer(method: str, case: Case, episode: Episode) -> dict[str, Any]:
    """The honest default writer: ``tree.py`` and ``feedback.py`` over the trajectory."""
    template = case.payload["template"]
    return unlabelled_feedback(method, template, episode.steps, skill_name(template))


def feedback(method: str, case: Case, episode: Episode, seed: int, edits: int, repeat: int,
             writer: TreeWriter = rule_writer) -> dict[str, Any]:
    """The task's feedback document of ``method`` from repeat ``repeat``'s initial attempt
    (it names both: a memory belongs to one task, and its content id to one source). ``labelled`` also reads the hidden verdict of the initial attempt and
    carries the harness its edits produced; no other method sees an outcome."""
    if method == "labelled":
        trace = trace_of(case.case_id, case.payload, episode)
        document, harness = labelled(trace, edits, derive_seed(seed, "dense", "labelled", case.case_id))
        return {"task": case.case_id, "repeat": repeat, **document, "harness": harness}
    return {"task": case.case_id, "repeat": repeat, **writer(method, case, episode)}


def retry_harness(case: Case, document: Mapping[str, Any]) -> dict[str, Any]:
    """The harness the frozen receiver retries with, given the feedback document."""
    if document["method"] == "labelled":
        return dict(document["harness"])
    return receive(case.payload["template"], document)


def read_tokens(document: Mapping[str, Any]) -> int:
    """What the receiver reads: the document without its task and repeat (and, for
    labelled, without the harness it already runs)."""
    return tokens({k: v for k, v in document.items() if k not in ("task", "repeat", "harness")})


def retry_attempt(case: Case, document: Mapping[str, Any], seed: int, repeat: int) -> Episode:
    """The retry of repeat ``repeat`` with ``document`` carried over."""
    harness = load_harness(retry_harness(case, document))
    return run_episode(phase_case(case, seed, repeat, "retry").payload, harness)
