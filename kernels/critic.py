"""Critic losses: PPO's clipped value MSE and PACT's importance-corrected BCE critic."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from kernels.configs import PACTConfig, ValueLossConfig
from kernels.reduce import token_mean
from kernels.types import LossOutputs, PACTInputs, ValueInputs


def ppo_value_loss(inputs: ValueInputs, cfg: ValueLossConfig) -> LossOutputs:
    """PPO value loss: 0.5 * max((V - R)^2, (V_clip - R)^2), V_clip = V_old +
    clip(V - V_old, -clip, clip); token mean over valid tokens (clamp(min=1)).

    As in the PPO2 reference implementation; the PPO paper itself states the unclipped
    squared error. Metric clip_frac: tokens where the clipped branch is the larger."""
    mask = inputs.mask.bool()
    old = inputs.old_values.detach()
    returns = inputs.returns.detach()
    clipped = old + (inputs.values - old).clamp(-cfg.clip, cfg.clip)  # (B, T)
    err = (inputs.values - returns) ** 2
    err_clipped = (clipped - returns) ** 2
    loss = 0.5 * token_mean(torch.maximum(err, err_clipped), mask)
    with torch.no_grad():
        metrics = {"clip_frac": token_mean((err_clipped > err).to(err.dtype), mask)}
    return LossOutputs(loss, metrics)


def pact_critic_loss(inputs: PACTInputs, cfg: PACTConfig) -> LossOutputs:
    """PACT critic step, run after the actor update: BCE of sigmoid(value_logits) toward
    the GAE(lambda=1) return (the binary outcome), weighted by the current-token ratio
    rho_t = pi_new(a_t | s_t) / pi_old(a_t | s_t) of the UPDATED actor re-forwarded on the
    old trajectories. Tokens with rho_t outside [ratio_low, ratio_high] carry no loss.
    Normalisation: token mean over the tokens left in (clamp(min=1)), so a batch whose
    ratios are all out of range gives loss 0.

    The exact correction is the product of ratios over the whole suffix; like the paper's
    implementation this keeps only the current token, which makes the target
    "act with pi_new now, then pi_old". Where the notes are silent: the ratio weights the
    BCE rather than scaling the target (this keeps the target a valid probability; the
    minimiser is the same E_old[rho R] / E_old[rho]), and the range default is
    [0.8, 1.25]. importance_correction=False is the paper's ablation (plain BCE, no mask).
    Metrics: masked_frac (valid tokens dropped by the range), ratio_mean (valid tokens)."""
    mask = inputs.mask.bool()
    log_ratio = (inputs.new_logprobs - inputs.old_logprobs).detach()  # (B, T)
    ratio = torch.exp(log_ratio) if cfg.importance_correction else torch.ones_like(log_ratio)
    in_range = (ratio >= cfg.ratio_low) & (ratio <= cfg.ratio_high)  # (B, T)
    keep = mask & in_range
    bce = F.binary_cross_entropy_with_logits(inputs.value_logits, inputs.returns.detach(), reduction="none")
    loss = token_mean(ratio * bce, keep)
    with torch.no_grad():
        metrics = {
            "masked_frac": token_mean((~in_range).to(bce.dtype), mask),
            "ratio_mean": token_mean(ratio, mask),
        }
    return LossOutputs(loss, metrics)
