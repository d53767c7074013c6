"""spin: a calibrated workload for the overhead benchmark, not a research problem.

A case keeps the CPU busy for `ms` milliseconds (in the runner, so a mutated candidate
cannot shorten it) and asks the candidate for a number; the score is that number. With every stage of the platform around it, the
benchmark compares the wall time per evaluation with a bare Python loop doing the same
evaluations (benchmarks/overhead.py)."""

from __future__ import annotations

import math
from typing import Any

from suites.base import Case, Suite, Verdict

SEED_PROGRAM = '''def work(ms):
    """Return a value the mutations can change (the runner spends the `ms`)."""
    value = 0.5
    for _ in range(8):
        value = 0.5 * value + 0.25
    return value
'''

RUNNER = """import time


def run(fn, payload):
    \"\"\"Keep the CPU busy for the case's `ms` whatever the candidate does, then ask it.\"\"\"
    end = time.perf_counter() + payload["ms"] / 1000.0
    while time.perf_counter() < end:
        pass
    return {"value": float(fn(payload["ms"]))}
"""


class Spin(Suite):
    name = "spin"
    primary_metric = "value"
    entrypoint = "work"
    candidate = "a Python `work(ms)` that spins for ms milliseconds (a platform-overhead probe)"
    reference = "none: every case takes the same time; used to measure the platform, not candidates"

    def __init__(self, ms: float = 10.0, cases: int = 10):
        if ms <= 0 or cases < 4:
            raise ValueError(f"spin: ms must be > 0 and cases >= 4, got ms={ms}, cases={cases}")
        self.ms, self.n_cases = float(ms), int(cases)

    def cases(self) -> list[Case]:
        splits = ("train", "train", "select", "holdout")
        return [Case(f"spin-{i:03d}", splits[i % 4], {"ms": self.ms}) for i in range(self.n_cases)]

    def seed_program(self) -> str:
        return SEED_PROGRAM

    def runner_source(self) -> str:
        return RUNNER

    def score(self, case: Case, output: Any) -> Verdict:
        value = output.get("value") if isinstance(output, dict) else None
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            return Verdict(False, {"value": 0.0}, "output has no finite 'value'")
        return Verdict(True, {"value": float(value)})

    def normalize(self, value: float) -> float:
        return value
