"""Config of the `skilllift` loop (SkillLift, issue 16): cheap skill edits against a
frozen text-only rubric, then a few real runs that recalibrate the rubric by rank
agreement."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.frozen import Config


class SkillLiftConfig(Config):
    """Parameters of `skilllift` on toolsim (the paper leaves inner iterations,
    candidates per outer round and the correlation metric unspecified: these are the
    defaults chosen here). One `--budget` unit is one outer round."""

    inner_iterations: int = Field(12, ge=1, le=500)
    """Hill-climbing steps of the inner loop per outer round (rubric only, no simulator calls)."""
    proposals: int = Field(4, ge=1, le=64)
    """Revised skills proposed and rubric-scored per inner step."""
    top_k: int = Field(3, ge=1, le=32)
    """Skills the outer loop runs for real per round, besides the champion."""
    calibrate: Literal["pairwise", "regression", "off"] = "pairwise"
    """The rubric refit: a pairwise logistic ranking over every executed skill (the
    paper's ranking objective), ridge regression on the absolute real scores, or off
    (the rubric stays frozen: an ablation)."""
    l2: float = Field(0.1, ge=0.0, le=100.0)
    """Pull of the refit weights towards the current ones."""
    min_delta: float = Field(0.0, ge=0.0, le=1.0)
    """The challenger must beat the champion's mean real select success by more than this."""
