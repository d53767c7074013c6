"""Clipped PPO/GRPO policy loss with a named normalisation."""

from __future__ import annotations

import torch

from kernels.configs import PolicyLossConfig
from kernels.reduce import reducer, token_mean
from kernels.types import LossOutputs, PolicyInputs


def policy_loss(inputs: PolicyInputs, cfg: PolicyLossConfig) -> LossOutputs:
    """PPO clipped surrogate: -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A) per
    token, rho = exp(logp - old_logp), reduced by `cfg.aggregation` (see
    `PolicyLossConfig.aggregation`; every divisor is clamped to >= 1).

    Departs from GRPO (DeepSeekMath): no reference-KL penalty (the baseline of
    GRPODropout, DAPO and Dr. GRPO has none); the clip may be asymmetric (DAPO
    clip-higher); the paper's per-sequence mean is one of three aggregations.
    Metrics: clip_frac (tokens where the clipped branch is active), approx_kl (k3
    estimator of KL(old || new), token mean), entropy (token mean, when given)."""
    mask = inputs.mask.bool()
    adv = inputs.advantages.detach().to(inputs.logprobs.dtype)  # (B, T) or (B, 1)
    log_ratio = inputs.logprobs - inputs.old_logprobs.detach()  # (B, T)
    ratio = torch.exp(log_ratio)
    clipped = ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    per_token = -torch.minimum(ratio * adv, clipped * adv)  # (B, T)
    loss = reducer(cfg.aggregation, cfg.norm_tokens)(per_token, mask)

    with torch.no_grad():
        is_clipped = ((ratio > 1.0 + cfg.clip_high) & (adv > 0)) | ((ratio < 1.0 - cfg.clip_low) & (adv < 0))
        metrics = {
            "clip_frac": token_mean(is_clipped.to(ratio.dtype), mask),
            "approx_kl": token_mean(ratio - 1.0 - log_ratio, mask),
        }
        if inputs.entropy is not None:
            metrics["entropy"] = token_mean(inputs.entropy, mask)
    return LossOutputs(loss, metrics)
