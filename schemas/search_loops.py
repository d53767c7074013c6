"""Configs of the search-scheduling loops (issue 14): loops that improve how a search
spends its evaluations rather than the program itself."""

from __future__ import annotations

from pydantic import Field

from schemas.frozen import Config


class DreamRSIConfig(Config):
    """Parameters of `dream_rsi` (Dream-RSI): a scheduling policy (UCB constant, branch
    width, patience) rewritten by TPE in replay of recorded search trees, then run for
    real on the suite with the frozen `mutate` code agent."""

    ucb_c: float = Field(1.0, ge=0.0, le=10.0)
    """The initial policy's UCB exploration constant."""
    width: int = Field(8, ge=1, le=32)
    """The initial policy's branch width (children per expansion batch)."""
    patience: int = Field(3, ge=1, le=64)
    """The initial policy's patience (batches without a new best before it stops)."""
    attempts: int = Field(32, ge=2, le=2000)
    """Most child programs one real round may evaluate (its discovery budget)."""
    rewriter_trials: int = Field(30, ge=1, le=2000)
    """TPE trials of one dream, each a policy rehearsed on every recorded tree."""
    replay_runs: list[str] = []
    """Other runs of the store (evolve, dream_rsi) whose recorded trees join the replay pool."""
    mutations_per_child: int = Field(2, ge=1, le=16)
    """The frozen code agent's AST edits per child (the `mutate` proposer)."""
