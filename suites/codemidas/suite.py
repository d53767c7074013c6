"""codemidas: one coding environment built from installed Python source (see
``build.py``). A candidate is the task's function (its signature, docstring and a body
the solver writes), run in the sandbox on the task's hidden test inputs; the trusted
scorer compares each outcome (canonical result text or exception type) with the one the
original function produced. The score is the pass fraction over a split's tests.

The built tasks ship as package data (``suites/reference/codemidas/tasks.json``, pinned
by sha256 in ``suites.data``), each with the sha256 of the module source it was cut from:
a user's interpreter may have another stdlib, and a rebuild there would be another task
set, so the suite reads the shipped one. Splits, by a test's index i: i % 4 in {0, 1}
train, 2 select, 3 holdout. The seed program is the hollowed stub (pass fraction 0 on a
kept task).

Known leak (the paper's "duplicate installed copies"): the sandbox can import the
installed module, so a candidate that delegates to the original passes; the reference
benchmark measures it with a retrieval solver (it fails only where the module replaces
its pure-Python helpers by a C accelerator, as ``datetime`` does). The hidden expected
outcomes never enter the sandbox."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from suites.base import Case, Split, Suite, Verdict
from suites.codemidas import fuzz
from suites.data import read_verified

TASKS_FILE = "codemidas/tasks.json"
_SPLITS: tuple[Split, ...] = ("train", "train", "select", "holdout")


@cache
def shipped_tasks() -> tuple[dict[str, Any], ...]:
    """Every built candidate (kept and dropped, with its record), from the pinned file."""
    return tuple(json.loads(read_verified(TASKS_FILE).decode())["tasks"])


def kept_tasks() -> list[dict[str, Any]]:
    """The tasks that passed the reliably-graded filter."""
    return [t for t in shipped_tasks() if t["record"]["stage_reached"] == "kept"]


class CodeMidas(Suite):
    """One built task as a suite; ``task`` is its id (``module::function``)."""

    name = "codemidas"
    primary_metric = "pass"
    entrypoint = "solution"
    artifact_kind = "function"
    candidate = "the body of an installed Python function, from its signature and docstring"
    reference = "the original function (pass 1.0) it was hollowed from; HumanEval as a reference set"

    def __init__(self, task: str = "bisect::bisect_right"):
        tasks = {t["task_id"]: t for t in kept_tasks()}
        if task not in tasks:
            raise ValueError(f"codemidas has no kept task {task!r}; kept tasks: {sorted(tasks)}")
        self.task = tasks[task]
        self.entrypoint = self.task["name"]

    def check_data(self) -> int:
        read_verified(TASKS_FILE)
        return 1

    def cases(self) -> list[Case]:
        return [Case(f"{self.task['task_id']}#{i:03d}", _SPLITS[i % 4], {"args": test["args"]})
                for i, test in enumerate(self.task["tests"])]

    def seed_program(self) -> str:
        return self.task["stub"]

    def runner_source(self) -> str:
        return fuzz.RUNNER

    def score(self, case: Case, output: Any) -> Verdict:
        index = int(case.case_id.rsplit("#", 1)[1])
        got = fuzz.outcome(output)
        if got is None:
            return Verdict(False, {"pass": 0.0}, "output is not the runner's {returns|raises: text}")
        passed = got == self.task["tests"][index]["expect"]
        return Verdict(True, {"pass": float(passed)}, None if passed else "outcome differs from the original's")

    def normalize(self, value: float) -> float:
        return value
