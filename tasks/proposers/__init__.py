"""Proposers of the sample stage: pure logic that turns parents into a child program
(DESIGN.md, "Proposers"). ``make_proposer`` is the one place a proposer kind is chosen."""

from __future__ import annotations

from schemas.configs import EvolveConfig
from tasks.proposers.base import (
    FailureMemoryItem,
    NoMutableSites,
    ParentInfo,
    Proposal,
    Proposer,
    ProposerError,
    ProposerUnavailable,
    TerminalProposerError,
    TransientProposerError,
)
from tasks.proposers.diff import DiffError
from tasks.proposers.grammar_proposer import GrammarProposer
from tasks.proposers.llm import LLMProposer
from tasks.proposers.mutate import MutationProposer

__all__ = [
    "DiffError",
    "FailureMemoryItem",
    "GrammarProposer",
    "LLMProposer",
    "MutationProposer",
    "NoMutableSites",
    "ParentInfo",
    "Proposal",
    "Proposer",
    "ProposerError",
    "ProposerUnavailable",
    "TerminalProposerError",
    "TransientProposerError",
    "make_proposer",
]

PROPOSER_KINDS = ("mutate", "grammar", "llm")


def make_proposer(kind: str, config: EvolveConfig, *, task_description: str = "", entrypoint: str = "") -> Proposer:
    """The program proposer named ``kind``. ``task_description`` and ``entrypoint`` go
    into the LLM's prompt; the mutate proposer has no use for them. The LLM proposer is
    returned even when unconfigured: ask ``available()`` before a run starts."""
    if kind == "mutate":
        return MutationProposer(config)
    if kind == "grammar":
        return GrammarProposer(config)
    if kind == "llm":
        return LLMProposer(config, task_description=task_description, entrypoint=entrypoint)
    hint = " (optuna proposes configs, not programs)" if kind == "optuna" else ""
    raise ValueError(f"unknown proposer kind {kind!r}{hint}; choose one of: {', '.join(PROPOSER_KINDS)}")
