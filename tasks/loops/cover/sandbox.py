"""cover's execute: every program of a problem (the original and its mutants: untrusted
code) run in the sandbox, one batch per program, on every GT test and every pool input.
A batch's outcome is None where the run failed (a hang past the case limit, a crash)."""

from __future__ import annotations

from suites.codemidas.build import outcomes
from suites.executors.base import Executor
from tasks.loops.cover.problems import Problem


def run_programs(p: Problem, executor: Executor) -> dict[str, list[str | None]]:
    """Per program content id, its outcomes on `Problem.inputs` (each distinct program once)."""
    out: dict[str, list[str | None]] = {}
    for pid, source in zip(p.ids, p.sources):
        if pid not in out:
            out[pid] = outcomes(executor, source, p.entrypoint, p.inputs())
    return out
