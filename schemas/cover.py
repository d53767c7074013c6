"""Config of the `cover` loop (CoVer, issue 18): self-generated tests that learn to
discriminate programs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.frozen import Config


class CoverConfig(Config):
    """Parameters of `cover` on codemidas: a code role (a categorical policy over mutation
    operators applied to each task's original) and a test role (a categorical policy over
    input generators, expected outputs by the programs' plurality), both trained with
    REINFORCE with group normalisation for `--budget` steps."""

    problems: int = Field(8, ge=1, le=64)
    """The first this many kept codemidas tasks, in shipped order."""
    programs: int = Field(16, ge=2, le=64)
    """Programs per problem and step (the paper: 16)."""
    tests: int = Field(32, ge=2, le=128)
    """Tests per problem and step (the paper: 32)."""
    pool_size: int = Field(8, ge=1, le=64)
    """Inputs per generator and problem, run once in the sandbox by every program."""
    reward: Literal["mi_cov", "pass_rate"] = "mi_cov"
    """The test reward: covariance-gated mutual information (CoVer) or the pass rate."""
    filter: bool = True
    """The diversity filter (invalid, duplicate input, identical behaviour)."""
    code_lr: float = Field(1.0, gt=0.0, le=100.0)
    test_lr: float = Field(1.0, gt=0.0, le=100.0)
    max_trivial: float = Field(0.5, ge=0.0, le=1.0)
    """The gate rejects a suite with a larger share of tests every program passes."""
    case_timeout_s: float = Field(0.5, gt=0.0, le=60.0)
    """Per-case time limit of the sandbox for these small functions (a hanging mutant fails)."""
    eval_seeds: int = Field(2, ge=1, le=16)
    """Evaluation draws per problem (the gate pairs problems and seeds)."""
