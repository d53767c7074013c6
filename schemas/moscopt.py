"""Config of the `moscopt` loop (MOSCOPT, issue 16): co-evolve a pool of N skills and the
gating skill G that loads K of them per task, by three interleaved edit stages."""

from __future__ import annotations

from pydantic import Field

from schemas.frozen import Config


class MoscoptConfig(Config):
    """Parameters of `moscopt` on toolsim (the paper leaves N, K, the stage schedule and
    the stage-3 period unspecified: these are the defaults chosen here). One `--budget`
    unit is one edit round (one gated edit)."""

    k: int = Field(2, ge=1, le=32)
    """Skills G loads per task; only their text enters the agent's harness."""
    period: int = Field(4, ge=0, le=100)
    """Every `period`-th round is stage 3 (eliminate / combine / breed); 0: never."""
    max_pool: int = Field(8, ge=2, le=32)
    """Stage 3 combines or breeds only while the pool is smaller than this."""
    min_delta: float = Field(0.0, ge=0.0, le=1.0)
    """An edit is accepted iff validation success improves by more than this."""
    freeze_gating: bool = False
    """Ablation: G is never edited (stage 2 rounds become stage 1)."""
    all_at_once: bool = False
    """Ablation: every round applies one edit of each stage together, gated as one."""
