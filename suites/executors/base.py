"""The executor interface: run one candidate program on a batch of cases.

An executor turns (program, runner, entrypoint, cases) into one ``CaseResult`` per case,
in order. It never raises for anything the candidate does (crash, hang, hostile output):
those become statuses. It raises ``SandboxError`` only for our own bugs or
misconfiguration, such as a sandbox that cannot start the interpreter.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

from suites.base import Case, CaseResult


class SandboxError(RuntimeError):
    """The executor itself is broken or misconfigured; never caused by a candidate."""


class Executor(ABC):
    """Runs a candidate on cases; see the module docstring for the contract."""

    @abstractmethod
    def run(self, program: str, runner: str, entrypoint: str, cases: Sequence[Case]) -> list[CaseResult]:
        """Evaluate ``runner.run(program.<entrypoint>, case.payload)`` for every case.

        ``program`` is the candidate's source, ``runner`` the suite's runner source (a
        module defining ``run(fn, payload) -> JSON-able``). Returns one result per case,
        in the order of ``cases``."""
