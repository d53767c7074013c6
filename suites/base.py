"""The suite contract: cases with splits, a seed program, the runner that calls a
candidate inside the sandbox, and the trusted scorer that judges the runner's output
in the parent process (so a candidate that tampers with the runner gains nothing)."""

from __future__ import annotations

import hashlib
import inspect
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

Split = Literal["train", "select", "holdout", "protected", "test"]


@dataclass(frozen=True)
class Case:
    """One evaluation case. ``payload`` is JSON-able and is all the sandbox sees."""

    case_id: str
    split: Split
    payload: dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """The trusted scorer's judgement of one output. ``metrics[primary_metric]`` is
    what selection maximises; it is the suite's floor (e.g. 0) when ``valid`` is False."""

    valid: bool
    metrics: dict[str, float]
    reason: str | None = None


@dataclass(frozen=True)
class CaseResult:
    """What an executor reports for one case: the candidate's raw output (untrusted) or
    the way it failed."""

    case_id: str
    status: Literal["ok", "error", "timeout", "memory", "killed", "invalid"]
    output: Any = None
    error: str | None = None
    wall_s: float = 0.0
    cpu_s: float | None = None
    peak_rss_mb: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Suite(ABC):
    """An evaluation environment for program candidates."""

    name: str
    primary_metric: str
    """Higher is better."""
    entrypoint: str
    """The function a candidate program must define."""
    artifact_kind: str = "program"
    candidate: str = "a Python program"
    """What a candidate is, in words (for `ratchet suites`)."""
    reference: str = "none published"
    """What the scores are measured against (a published best, a baseline), in words."""

    def check_data(self) -> int:
        """Verify the reference data the suite reads (sha256 pins) before any work
        starts; raises ``suites.data.ReferenceDataError``. Returns the files checked."""
        return 0

    @abstractmethod
    def cases(self) -> list[Case]:
        """All cases with their splits, in a deterministic order."""

    @abstractmethod
    def seed_program(self) -> str:
        """Source of the initial candidate."""

    @abstractmethod
    def runner_source(self) -> str:
        """Source of a module defining ``run(fn, payload) -> JSON-able output``; it runs
        inside the sandbox next to the candidate and calls the entrypoint ``fn``."""

    @abstractmethod
    def score(self, case: Case, output: Any) -> Verdict:
        """Judge an untrusted output for a case. Pure; never raises on bad output."""

    @abstractmethod
    def normalize(self, value: float) -> float:
        """Map the primary metric to a unit-free scale where 1.0 is the published best
        (used for composites across suites)."""

    def normalized(self, metrics: dict[str, float]) -> float:
        """One case's score on the unit-free scale of `normalize`; suites whose cases have
        different published bests (e.g. circle packings of different n) override it."""
        return self.normalize(metrics[self.primary_metric])

    def scorer_version(self) -> str:
        """Hash of the scorer's source: the module that defines this suite (hashed once
        per version of its file, see `source_hash`)."""
        return source_hash(inspect.getmodule(type(self)))


_SOURCE_HASHES: dict[tuple[str, str, int, int], str] = {}


def source_hash(module) -> str:
    """sha256 (16 hex digits) of a module's source. Cached per (module, file, mtime,
    size): a score stage asks once per round, and the answer changes only with the file."""
    path = None
    try:
        path = inspect.getsourcefile(module)
        stat = os.stat(path) if path else None
    except (OSError, TypeError):
        stat = None
    key = (module.__name__, path, stat.st_mtime_ns, stat.st_size) if stat else None
    if key is not None and key in _SOURCE_HASHES:
        return _SOURCE_HASHES[key]
    digest = hashlib.sha256(inspect.getsource(module).encode()).hexdigest()[:16]
    if key is not None:
        _SOURCE_HASHES[key] = digest
    return digest
