"""Kernel configs: the tiny model's shape, each loss's parameters, and the non-loss
rules (group filters, masks, CLOOPD allocation). Bounded pydantic models, one docstring
per field. `LossConfig` is the discriminated union that `kernels.build.build_loss`
dispatches on once. Defaults marked *not specified* are this project's choices where
the paper notes are silent (see each loop's flow docstring)."""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

Aggregation = Literal["token_mean", "seq_mean", "seq_sum_constant"]


class KernelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TinyLMConfig(KernelConfig):
    """Shape of the decoder-only transformer in `kernels.model` (0.1-1 M parameters)."""

    vocab_size: int = Field(32, ge=2, le=65_536)
    """Token ids are in [0, vocab_size)."""
    d_model: int = Field(64, ge=8, le=1024)
    """Residual width; must be divisible by n_heads."""
    n_layers: int = Field(2, ge=1, le=16)
    """Transformer blocks."""
    n_heads: int = Field(4, ge=1, le=32)
    """Attention heads per block."""
    max_len: int = Field(64, ge=2, le=4096)
    """Longest sequence (prompt plus generation) the position table covers."""

    @model_validator(mode="after")
    def _check(self) -> "TinyLMConfig":
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "pick n_heads that divides d_model"
            )
        return self


class PolicyLossConfig(KernelConfig):
    """Clipped PPO/GRPO surrogate (also the CLOOPD pass loss)."""

    type: Literal["ppo_clip"] = "ppo_clip"
    clip_low: float = Field(0.2, ge=0.0, le=1.0)
    """Ratios below 1 - clip_low stop contributing gradient for negative advantages."""
    clip_high: float = Field(0.2, ge=0.0, le=10.0)
    """Ratios above 1 + clip_high stop contributing gradient for positive advantages."""
    aggregation: Aggregation = "token_mean"
    """token_mean: sum over all valid tokens / their count (DAPO). seq_mean: mean per
    sequence, then mean over non-empty sequences (GRPO paper). seq_sum_constant: sum /
    (B * norm_tokens), a constant that ignores lengths (Dr. GRPO)."""
    norm_tokens: int = Field(256, ge=1)
    """The constant per-sequence token count of `seq_sum_constant` (the max generation length)."""


class ValueLossConfig(KernelConfig):
    """PPO clipped-MSE value loss."""

    type: Literal["ppo_value"] = "ppo_value"
    clip: float = Field(0.2, gt=0.0)
    """New values may move at most this far from the old values before the clipped branch wins."""


class PACTConfig(KernelConfig):
    """PACT critic: BCE toward the updated policy via the current-token ratio."""

    type: Literal["pact_critic"] = "pact_critic"
    ratio_low: float = Field(0.8, gt=0.0, le=1.0)
    """Tokens with ratio new/old below this carry no critic loss (*not specified*)."""
    ratio_high: float = Field(1.25, ge=1.0)
    """Tokens with ratio new/old above this carry no critic loss (*not specified*)."""
    importance_correction: bool = True
    """False gives the paper's ablation: plain BCE on the returns, no ratio, no mask."""


class GVPOConfig(KernelConfig):
    """GVPO: centred implicit-vs-true reward MSE."""

    type: Literal["gvpo"] = "gvpo"
    beta: float = Field(0.1, gt=0.0)
    """KL coefficient of the implicit reward beta * log(pi/pi_ref) (*not specified*)."""


class GVPODistillConfig(KernelConfig):
    """GVPO's OPD form over whole-sequence log-probabilities."""

    type: Literal["gvpo_opd"] = "gvpo_opd"
    length_power: float = Field(1.0, ge=0.0, le=2.0)
    """Sequence log-probs are scaled by length**-length_power before centring: 0 is the
    plain whole-sequence form, 1 a per-token mean (*not specified*)."""


class OPDConfig(KernelConfig):
    """Sampled-token reverse-KL on-policy distillation (no parameters)."""

    type: Literal["opd"] = "opd"


class DIALConfig(KernelConfig):
    """DIAL-OPD: OPD on the top-rho tokens by disagreement x log-mean probability weight."""

    type: Literal["dial_opd"] = "dial_opd"
    keep_ratio: float = Field(0.4, gt=0.0, le=1.0)
    """rho: fraction of each response's valid tokens that carry loss (paper: 40%)."""
    beta: float = Field(0.5, ge=0.0, le=4.0)
    """Strength of the log-mean weight L(p_T, p_S)**beta; 0 ranks by |disagreement| only
    ("moderate" in the paper, value *not specified*)."""


class CalOPDConfig(KernelConfig):
    """Cal-OPD: learn only the residual outside the teacher's self-shift interval."""

    type: Literal["cal_opd"] = "cal_opd"
    amplification: float = Field(1.0, ge=0.0, le=10.0)
    """Scale of the probe shifts that set the interval width (*not specified*); 0 is plain OPD."""


class AttractRepelConfig(KernelConfig):
    """Contrastive self-distillation with a sampled-token generalised JSD."""

    type: Literal["attract_repel"] = "attract_repel"
    jsd_beta: float = Field(0.5, gt=0.0, lt=1.0)
    """Mixture weight of the student in M = beta * p_S + (1 - beta) * p_T (*not specified*)."""
    attract_weight: float = Field(0.5, ge=0.0, le=1.0)
    """Weight of the pull toward the correct-context teacher (paper: half)."""
    repel_weight: float = Field(0.5, ge=0.0, le=1.0)
    """Weight of the push from the wrong-context teacher (paper: half)."""


class CLOOPDConfig(KernelConfig):
    """CLOOPD: adaptive-alpha mixture target, frozen for several clipped passes."""

    type: Literal["cloopd"] = "cloopd"
    kl_bound: float = Field(0.5, gt=0.0)
    """Largest sampled KL proxy KL(p_S || q_alpha) allowed for the target (*not specified*)."""
    tail_quantile: float = Field(0.05, gt=0.0, lt=0.5)
    """Quantile of the per-token reward log q_alpha - log p_S that defines the negative tail."""
    tail_bound: float = Field(2.0, gt=0.0)
    """That quantile must stay above -tail_bound nats (*not specified*)."""
    alpha_grid: int = Field(21, ge=2, le=1001)
    """alpha is searched on linspace(0, 1, alpha_grid); the largest feasible value wins."""
    clip: float = Field(0.2, gt=0.0, le=1.0)
    """Symmetric ratio clip of every pass against the frozen old log-probs."""


class TPMRConfig(KernelConfig):
    """CLOOPD's third-pass allocation rule (all thresholds *not specified*)."""

    min_rate: float = Field(0.0, ge=0.0)
    """Pass-2 progress per student token must exceed this."""
    token_budget: int = Field(10_000_000, ge=1)
    """Student tokens a run may spend on all passes."""
    quota: float = Field(0.5, ge=0.0, le=1.0)
    """At most this fraction of batches so far may get a third pass."""
    max_pass_kl: float = Field(0.05, gt=0.0)
    """Stability: the approx KL of pass 2 against the frozen old policy must stay below this."""


class GRPODropoutConfig(KernelConfig):
    """GRPODropout's rollout selection."""

    n_drop: int = Field(1, ge=0)
    """Most rollouts dropped per group (paper figure: 1 of 8)."""
    min_effect: float = Field(0.0, ge=0.0)
    """Only rollouts whose entropy-effect proxy exceeds this can be dropped (*not specified*)."""


class TwoEndConfig(KernelConfig):
    """Two-End Trace Supervision: which steps form the masked middle."""

    head_frac: float = Field(0.4, ge=0.0, le=1.0)
    """Steps whose token centre lies before this fraction of the trace are the head (*not specified*)."""
    middle_frac: float = Field(0.2, ge=0.0, le=1.0)
    """Width of the middle band in trace-token fraction (paper: about 20%)."""

    @model_validator(mode="after")
    def _check(self) -> "TwoEndConfig":
        if self.head_frac + self.middle_frac > 1.0:
            raise ValueError(
                f"head_frac={self.head_frac} + middle_frac={self.middle_frac} exceeds 1; "
                "shrink one so the tail is not negative"
            )
        return self


class STRIDEConfig(KernelConfig):
    """STRIDE's early-stop and restart thresholds (both *not specified*)."""

    stop_threshold: float = Field(-2.0, le=0.0)
    """Stop when the cumulative mean teacher log-prob of the new turns falls below this."""
    pass_threshold: float = Field(-1.0, le=0.0)
    """A buffered turn qualifies for reuse when its mean teacher log-prob is at least this."""


LossConfig = Annotated[
    Union[
        PolicyLossConfig,
        ValueLossConfig,
        PACTConfig,
        GVPOConfig,
        GVPODistillConfig,
        OPDConfig,
        DIALConfig,
        CalOPDConfig,
        AttractRepelConfig,
        CLOOPDConfig,
    ],
    Field(discriminator="type"),
]
