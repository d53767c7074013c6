"""The proposer contract of the sample stage: what a proposer is given (parents and the
distilled failure memory), what it returns (one child program), and the errors it
raises, split by what the caller should do about them (DESIGN.md, "Proposers").

Proposers are pure apart from the network call of the LLM proposer: randomness comes
only from the ``random.Random`` the caller seeds, so a retried sample stage with the
same seed proposes the same child."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol, Sequence


@dataclass(frozen=True)
class ParentInfo:
    """A parent as the archive hands it to a proposer."""

    candidate_id: str
    source: str
    score: float | None
    """Select-split mean of the parent; None when it has not been scored yet."""
    errors: tuple[str, ...] = ()
    """Error kinds of the parent's recent executions (e.g. "timeout", "ValueError"),
    most recent first; the LLM proposer shows them to the model."""


@dataclass(frozen=True)
class FailureMemoryItem:
    """A distilled failure pattern: children made by ``operator`` failed with
    ``error_kind`` ``support`` times."""

    operator: str
    error_kind: str
    support: int


@dataclass(frozen=True)
class Proposal:
    """A proposed child. ``operator`` names the single edit kind that made it, so that
    failures of the child can be attributed back to that operator by the distiller."""

    source: str
    operator: str
    parent_ids: tuple[str, ...]
    """The parents the child was actually derived from (one, or two for crossover)."""
    proposer: str
    """"mutate" or "llm": which proposer made the child, recorded with every candidate."""
    summary: str
    """A human-readable account of the edits, e.g. "constant: 0.35 -> 0.41 in f (line 12)"."""
    unusable: str | None = None
    """Why a model's answer yields no program to evaluate (an edit that does not apply, a
    timeout, an HTTP error); None for a child worth evaluating. An unusable proposal is
    recorded, never executed: ``source`` then holds the answer's record, not a program."""
    answer: str | None = None
    """The model's raw answer text (LLM proposals only), stored as a blob with the candidate."""
    tokens_in: int | None = None
    """Prompt tokens of the call, as the endpoint's ``usage`` reported them."""
    tokens_out: int | None = None
    """Completion tokens of the call."""
    latency_s: float | None = None
    """Wall seconds of the call."""


class Proposer(Protocol):
    """Anything that turns parents into a child program. A proposer whose class sets
    ``reads_history = True`` also takes ``history=``: every scored program of the run so
    far, as ``ParentInfo`` in archive order (the grammar proposer fits TPE to it)."""

    def available(self) -> tuple[bool, str]:
        """Whether the proposer can run here, and if not, what to do about it."""
        ...

    def propose(
        self,
        parents: Sequence[ParentInfo],
        rng: random.Random,
        failure_memory: Sequence[FailureMemoryItem] = (),
    ) -> Proposal:
        """One child of ``parents[0]`` (and possibly ``parents[1]``)."""
        ...


class ProposerError(RuntimeError):
    """A proposer could not produce a child."""


class ProposerUnavailable(ProposerError):
    """The proposer is not configured here; the message says how to configure it."""


class TransientProposerError(ProposerError):
    """A failure worth retrying unchanged (rate limit, server error, lost connection)."""


class TerminalProposerError(ProposerError):
    """A failure that retrying the same request will not fix (bad request, bad key,
    malformed response)."""


class NoMutableSites(ProposerError):
    """The program offers no site any operator could edit."""


def effective_failure_memory(
    failure_memory: Sequence[FailureMemoryItem], enabled: bool, min_support: int
) -> list[FailureMemoryItem]:
    """The items a proposer may act on: none when the config disables failure memory,
    otherwise those with at least ``min_support`` occurrences. Filtering here as well
    as in the distiller keeps a proposer honest when handed an unfiltered list."""
    if not enabled:
        return []
    return [item for item in failure_memory if item.support >= min_support]
