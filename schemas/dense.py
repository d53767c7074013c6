"""Config of the `dense` loop (DENSE, issue 17): turn old toolsim trajectories without
outcome labels into feedback, retry once with only the feedback carried over."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from schemas.frozen import Config

DENSE_METHODS = ("none", "raw", "flat", "tree", "tree_nsr", "labelled")
"""no feedback, raw error dump, flat summary (no hierarchy), the tree, the tree without
shortcut and reconciliation, and the outcome-labelled reference."""
Split = Literal["train", "select", "holdout", "protected", "test"]


class DenseConfig(Config):
    """Parameters of `dense` on toolsim (REFIT protocol): one initial attempt per task and
    repeat under the starter harness, one feedback document per method from that same
    trajectory (outcomes hidden from every method but `labelled`), then a retry in a
    fresh environment (the world rebuilt, new event-keyed noise shared by every method)
    with only the feedback carried over. `--budget` counts repeats (the paper: 3)."""

    methods: tuple[str, ...] = DENSE_METHODS
    """Feedback methods retried; `none` is the baseline every comparison pairs with."""
    memory_method: str = "tree"
    """The method whose feedback document is the task's memory: a candidate, admitted by
    the memory gate on select tasks and registered as `toolsim/dense/<task>` champion."""
    splits: tuple[Split, ...] = ("train", "select", "protected", "holdout", "test")
    """Case splits whose tasks are attempted (every task by default, as the paper)."""
    labelled_edits: int = Field(2, ge=1, le=8)
    """Edits the rule proposer makes from the labelled trajectory (its verdict and unmet
    goals) for the outcome-labelled reference; the paper has no such arm."""
    resamples: int = Field(2000, ge=100, le=100_000)
    """Task-bootstrap resamples of each method comparison's CI."""

    @model_validator(mode="after")
    def _check(self) -> "DenseConfig":
        unknown = sorted(set(self.methods) - set(DENSE_METHODS))
        if unknown or "none" not in self.methods:
            raise ValueError(f"dense.methods {list(self.methods)}: unknown {unknown}; they must include 'none' (the "
                             f"baseline); known: {', '.join(DENSE_METHODS)}")
        if self.memory_method not in self.methods or self.memory_method in ("none", "labelled"):
            raise ValueError(f"dense.memory_method {self.memory_method!r} must be one of the unlabelled methods run "
                             f"({[m for m in self.methods if m not in ('none', 'labelled')]})")
        return self
