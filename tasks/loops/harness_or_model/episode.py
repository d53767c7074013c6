"""One run of the frozen coding policy (`coder`) under a codemidas harness arm, and what
the run records. Pure: the sandbox comes in as ``run_visible`` (a body's outcome per
visible test, None where the run failed), so the loop is tested on hand-built outcomes.

Per attempt the harness runs the policy's body on the visible (train) tests and answers
with its feedback (``pass_fraction``: passed of total; ``first_failure``: also the first
failing test's input, expected outcome and the outcome got). Before each attempt the
policy may stop (`coder.propose` returns None): ``completed`` when its last attempt
passed every visible test, else ``gave_up``; both are the agent ending the run itself.
When it wants another attempt past the arm's limit the run is ``step_limit``. The
answer (its best attempt) is graded on the hidden holdout tests elsewhere: solved,
finished and stopped by the limit are counted apart."""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from tasks.loops.harness_or_model import coder
from tasks.loops.harness_or_model.arms import Arm, run_metrics, tokens

Outcome = str | None


def feedback(kind: str, visible: Sequence[dict[str, Any]], got: Sequence[Outcome]) -> coder.Feedback:
    """The arm's feedback on one attempt: ``visible`` are the tests ({args, expect})."""
    if kind not in ("pass_fraction", "first_failure"):
        raise ValueError(f"unknown feedback {kind!r}; known: pass_fraction, first_failure")
    failing = [(t, g) for t, g in zip(visible, got, strict=True) if g != t["expect"]]
    shown = None
    if kind == "first_failure" and failing:
        test, outcome = failing[0]
        shown = {"args": test["args"], "expect": test["expect"], "got": outcome or "(the run failed)"}
    return coder.Feedback(len(visible) - len(failing), len(visible), shown)


def feedback_text(found: coder.Feedback) -> str:
    """The feedback as the harness writes it (what usage counts as the turn's input)."""
    text = f"visible tests passed: {found.passed}/{found.total}"
    if found.failure:
        text += (f"; first failing: args={json.dumps(found.failure['args'])} expected {found.failure['expect']} "
                 f"got {found.failure['got']}")
    return text


def run_episode(task: dict[str, Any], arm: Arm, seed_index: int, visible: Sequence[dict[str, Any]],
                run_visible: Callable[[str], Sequence[Outcome]]) -> dict[str, Any]:
    """The run's trace: the order, every attempt (strategy, source, feedback), the status
    and the answer's source."""
    ordered = coder.order(task["task_id"], seed_index)
    history: list[coder.Attempt] = []
    while True:
        proposal = coder.propose(task, ordered, history)
        if proposal is None:
            status = "completed" if history and history[-1].feedback.finished else "gave_up"
            break
        if len(history) == arm.max_steps:
            status = "step_limit"
            break
        strategy, source = proposal
        history.append(coder.Attempt(strategy, source, feedback(arm.document["feedback"], visible,
                                                                 run_visible(source))))
    chosen = coder.answer(history)
    return {"task": task["task_id"], "arm": arm.name, "seed": seed_index, "order": list(ordered), "status": status,
            "attempts": [{"strategy": a.strategy, "source": a.source, "passed": a.feedback.passed,
                          "total": a.feedback.total, "feedback": feedback_text(a.feedback)} for a in history],
            "answer": chosen.source if chosen else None, "answer_strategy": chosen.strategy if chosen else None}


def prompt_of(task: dict[str, Any], arm: Arm) -> str:
    """The cached prompt of every turn: the harness's instructions and the task's stub."""
    return arm.document["instructions"] + "\n\n" + task["stub"]


def usage_of_trace(trace: dict[str, Any], prompt: str, arm: Arm) -> dict[str, float]:
    """Usage as the arm reports it, as toolsim's `arms.usage_of` counts turns: each
    attempt is a turn that sends the cached prompt, reads the feedback (input) and writes
    the body (output, 4 tokens of framing). With ``cache_included`` the reported input
    counts the cached prompt too. A proxy for billed tokens: no model is billed here."""
    turns = trace["attempts"]
    fresh = sum(tokens(a["feedback"]) for a in turns)
    cached = tokens(prompt) * len(turns)
    return {"in_tok": float(fresh + cached if arm.cache_included else fresh), "cached_tok": float(cached),
            "out_tok": float(sum(tokens(a["source"]) + 4 for a in turns))}


def trace_metrics(trace: dict[str, Any], holdout_passed: int, holdout_total: int) -> dict[str, float]:
    """The counts kept apart for a graded run: solved (the answer passes every hidden
    holdout test), ended by itself, stopped by the limit, attempts (``tool_calls``), and
    the answer's holdout pass fraction."""
    solved = trace["answer"] is not None and holdout_passed == holdout_total
    return {**run_metrics(trace["status"], solved, len(trace["attempts"])),
            "holdout_pass": holdout_passed / holdout_total if trace["answer"] is not None else 0.0}
