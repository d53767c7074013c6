"""GVPO: reward fitting and distillation as one group-centred squared error."""

from __future__ import annotations

import torch

from kernels.configs import GVPOConfig, GVPODistillConfig
from kernels.types import GVPODistillInputs, GVPOInputs, LossOutputs


def _centre(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(-1, keepdim=True)  # (G, n), mean over each group


def gvpo_loss(inputs: GVPOInputs, cfg: GVPOConfig) -> LossOutputs:
    """GVPO: 0.5 * mean over all G*n samples of (c(beta * log(pi/pi_ref)) - c(R))^2, where
    c() subtracts the group mean (the partition term cancels). Gradient per sample:
    beta * residual_i * grad log pi(y_i) / (G n), a weighted log-likelihood. No importance
    ratios: samples may come from any policy that covers the responses.

    Departs from the paper: the mean over samples (instead of a per-group sum) makes the
    scale independent of G and n; beta is a parameter (value not in the notes). Metrics:
    residual_std, implicit_reward_std (of the centred implicit reward)."""
    implicit = cfg.beta * (inputs.logprobs - inputs.ref_logprobs.detach())  # (G, n)
    residual = _centre(implicit) - _centre(inputs.rewards.detach().to(implicit.dtype))  # (G, n)
    loss = 0.5 * (residual**2).mean()
    with torch.no_grad():
        metrics = {
            "residual_std": residual.std(correction=0),
            "implicit_reward_std": _centre(implicit).std(correction=0),
        }
    return LossOutputs(loss, metrics)


def gvpo_distill_loss(inputs: GVPODistillInputs, cfg: GVPODistillConfig) -> LossOutputs:
    """GVPO's OPD form: the teacher's whole-sequence log-prob is the reward and the
    student's is the implicit reward (beta = 1, no reference): 0.5 * mean of
    (c(w * log p_S) - c(w * log p_T))^2 with the length weight w = length**-length_power.
    Only within-group differences enter, so the two models' vocabularies need not match.
    With w = 1 the optimum is p_S proportional to p_T over the group's responses.

    Where the notes are silent: the form of the length weight (a power of the student's
    token count, default 1 = per-token mean log-prob, which removes the pull toward
    shorter responses that summed log-probs carry) and the mean over samples.
    Metrics: residual_std, length_corr (correlation of residual and length)."""
    w = inputs.lengths.detach().to(inputs.student_logprobs.dtype).pow(-cfg.length_power)  # (G, n)
    residual = _centre(w * inputs.student_logprobs) - _centre(w * inputs.teacher_logprobs.detach())  # (G, n)
    loss = 0.5 * (residual**2).mean()
    with torch.no_grad():
        r = residual - residual.mean()
        length = inputs.lengths.to(r.dtype) - inputs.lengths.to(r.dtype).mean()
        corr = (r * length).sum() / ((r.norm() * length.norm()).clamp(min=1e-12))
        metrics = {"residual_std": residual.std(correction=0), "length_corr": corr}
    return LossOutputs(loss, metrics)
