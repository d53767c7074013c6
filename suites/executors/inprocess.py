"""The in-process executor, for trusted code only (e.g. torch training steps).

The runner and the program are executed into fresh module namespaces in this very
process: no isolation, no limits, no timeout, the parent's environment and files. An
exception becomes status "error" (MemoryError "memory"), and an output that is not
JSON-serialisable or is over ``max_output_bytes`` becomes "invalid", exactly as in the
sandbox, so the two executors give the same results for well-behaved code. Outputs go
through a JSON round trip for the same reason (tuples come back as lists).
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any, Callable, Sequence

from suites.base import Case, CaseResult
from suites.executors.base import Executor
from suites.executors.harness import describe_error, load, run_case

_EXTRA = {"executor": "inprocess", "isolation": "none"}


class InProcessExecutor(Executor):
    """Runs trusted candidates in this process (see the module docstring)."""

    def __init__(self, max_output_bytes: int = 1_000_000) -> None:
        self.max_output_bytes = max_output_bytes

    def run(self, program: str, runner: str, entrypoint: str, cases: Sequence[Case]) -> list[CaseResult]:
        names = (f"ratchet_runner_{uuid.uuid4().hex}", f"ratchet_candidate_{uuid.uuid4().hex}")
        try:
            try:
                run_fn, fn = load(runner, program, entrypoint, names)
            except Exception as exc:  # trusted code, but still the candidate's failure
                status = "memory" if isinstance(exc, MemoryError) else "error"
                error = f"loading the program: {describe_error(exc)}"
                return [CaseResult(case.case_id, status, error=error, extra=dict(_EXTRA)) for case in cases]
            return [self._run_case(run_fn, fn, case) for case in cases]
        finally:
            for name in names:
                sys.modules.pop(name, None)

    def _run_case(self, run_fn: Callable[[Callable, Any], Any], fn: Callable, case: Case) -> CaseResult:
        record = run_case(run_fn, fn, case.payload, self.max_output_bytes, Exception, reset_peak=False)
        text = record.pop("output_json")
        output = None if text is None else json.loads(text)
        return CaseResult(case_id=case.case_id, output=output, extra=dict(_EXTRA), **record)
