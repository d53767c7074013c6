"""OpenEvolve's problem format, run unchanged: `--suite openevolve --param path=DIR`.

A problem folder holds ``initial_program.py`` (the evolving code between
``# EVOLVE-BLOCK-START`` and ``# EVOLVE-BLOCK-END``) and ``evaluator.py`` with
``evaluate(program_path)`` returning a metrics dict (or an object with ``.metrics``),
optionally ``evaluate_stage1`` (the first stage of its cascade). ``combined_score`` is
the objective; without it, the mean of the numeric metrics (OpenEvolve's fallback).
The default folder is the project's own example (``suites/openevolve_example/``).

Cases: ``select/evaluate`` runs ``evaluate``; ``train/stage1`` runs ``evaluate_stage1``
when the evaluator has one (the cheap stage, where evolve's failure memory learns). An
OpenEvolve problem has no held-out split, so there is no holdout case: a champion's
``holdout_score`` stays empty rather than repeating the selection score.

Trust: the evaluator is the problem author's code and it imports the candidate, so it
runs inside the sandbox *with* the candidate (the runner writes the candidate to a file
in the sandbox directory and calls the evaluator on it). Its metrics are therefore only
as trustworthy as the candidate: a candidate can change what the evaluator returns, or
its own text outside the EVOLVE-BLOCK (the runner refuses such a candidate, but that
check runs in the sandbox too). The parent only keeps the numeric metrics (every one
recorded as a score) and checks their shape. Use it for problems whose candidates come
from a proposer you trust as much as the evaluator, or re-score the champion outside.
"""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path
from typing import Any

from suites import blocks
from suites.base import Case, Suite, Verdict
from suites.blocks import END, START, outside_block

EXAMPLE = Path(__file__).resolve().parent / "openevolve_example"
MAX_METRICS = 64

RUN_SOURCE = '''

def run(fn, payload):
    source = sys.modules[fn.__module__].__ratchet_source__
    if outside_block(source) != payload["frozen"]:
        return {"error": "the program changed code outside its EVOLVE-BLOCK"}
    path = os.path.join(os.getcwd(), "program_%d.py" % os.getpid())
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(source)
    evaluator = types.ModuleType("evaluator")
    evaluator.__file__ = "evaluator.py"
    exec(compile(payload["evaluator"], "evaluator.py", "exec"), evaluator.__dict__)
    result = getattr(evaluator, payload["stage"])(path)
    metrics = getattr(result, "metrics", result)
    return {"metrics": {str(k): float(v) for k, v in dict(metrics).items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)}}
'''
RUNNER_SOURCE = (f"import os, sys, types\n\nSTART, END = {START!r}, {END!r}\n\n\n"
                 + inspect.getsource(blocks.outside_block) + RUN_SOURCE)
"""Runs in the sandbox: writes the candidate to a file in the sandbox directory, loads
the evaluator from its source and calls the case's stage on that file."""


def first_function(source: str) -> str:
    """The first top-level function of a program: the entrypoint the sandbox loads (the
    evaluator calls what it wants; the harness needs one callable to exist)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            return node.name
    raise ValueError("initial_program.py defines no top-level function")


class OpenEvolve(Suite):
    """A problem folder in OpenEvolve's format, scored by its own evaluator."""

    name = "openevolve"
    primary_metric = "combined_score"
    candidate = "initial_program.py of an OpenEvolve problem (changes inside its EVOLVE-BLOCK)"
    reference = "the problem's own evaluator (no published best)"

    def __init__(self, path: str = str(EXAMPLE)):
        folder = Path(path).expanduser()
        program, evaluator = folder / "initial_program.py", folder / "evaluator.py"
        if not program.is_file() or not evaluator.is_file():
            raise ValueError(f"openevolve: {str(folder)!r} needs initial_program.py and evaluator.py "
                             "(OpenEvolve's problem format); pass --param path=DIR")
        self.path = str(folder.resolve())
        self.program, self.evaluator = program.read_text(), evaluator.read_text()
        if START not in self.program or END not in self.program:
            raise ValueError(f"openevolve: {program} has no {START} / {END} markers")
        try:
            self.entrypoint = first_function(self.program)
            self.stages = {n.name for n in ast.parse(self.evaluator).body if isinstance(n, ast.FunctionDef)}
        except SyntaxError as exc:
            raise ValueError(f"openevolve: {exc.filename or folder}: line {exc.lineno}: {exc.msg}") from None
        if "evaluate" not in self.stages:
            raise ValueError(f"openevolve: {evaluator} defines no evaluate(program_path)")

    def cases(self) -> list[Case]:
        base = {"evaluator": self.evaluator, "frozen": outside_block(self.program)}
        cases = [Case("stage1", "train", {**base, "stage": "evaluate_stage1"})] if "evaluate_stage1" in self.stages \
            else []
        return cases + [Case("evaluate", "select", {**base, "stage": "evaluate"})]

    def seed_program(self) -> str:
        return self.program

    def runner_source(self) -> str:
        return RUNNER_SOURCE

    def score(self, case: Case, output: Any) -> Verdict:
        if not isinstance(output, dict):
            return Verdict(False, {self.primary_metric: 0.0}, "the evaluator returned nothing")
        if "error" in output:
            return Verdict(False, {self.primary_metric: 0.0}, str(output["error"])[:200])
        metrics = output.get("metrics")
        if not isinstance(metrics, dict) or not metrics or len(metrics) > MAX_METRICS:
            return Verdict(False, {self.primary_metric: 0.0}, f"the evaluator returned no metrics dict of 1..{MAX_METRICS}")
        kept = {str(k)[:64]: float(v) for k, v in metrics.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
        if not kept:
            return Verdict(False, {self.primary_metric: 0.0}, "the evaluator returned no finite number")
        if self.primary_metric not in kept:
            kept[self.primary_metric] = sum(kept.values()) / len(kept)
        return Verdict(True, kept)

    def normalize(self, value: float) -> float:
        """The evaluator's own scale (OpenEvolve problems publish no best)."""
        return value
