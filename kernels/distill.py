"""On-policy distillation on the student's sampled tokens: OPD, DIAL-OPD, Cal-OPD and
Attract/Repel. Each is a policy-gradient surrogate -A_t * log p_S(y_t) with a detached
per-token signal A_t, token mean over the tokens that carry loss (clamp(min=1)); the
surrogate's value is not the divergence, which each loss reports as a metric."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from kernels.configs import AttractRepelConfig, CalOPDConfig, DIALConfig, OPDConfig
from kernels.reduce import token_mean
from kernels.types import CalOPDInputs, ContrastInputs, DistillInputs, LossOutputs


def _surrogate(student_logprobs: Tensor, signal: Tensor, mask: Tensor) -> Tensor:
    return token_mean(-signal.detach() * student_logprobs, mask)


def opd_loss(inputs: DistillInputs, cfg: OPDConfig) -> LossOutputs:
    """Sampled-token reverse KL: A_t = log p_T(y_t) - log p_S(y_t) with y ~ p_S, whose
    expected surrogate gradient is grad KL(p_S || p_T). One sample per position instead
    of the full-vocabulary sum. Metric reverse_kl: token mean of log p_S - log p_T."""
    signal = inputs.teacher_logprobs.detach() - inputs.student_logprobs.detach()  # (B, T)
    loss = _surrogate(inputs.student_logprobs, signal, inputs.mask)
    return LossOutputs(loss, {"reverse_kl": token_mean(-signal, inputs.mask)})


def log_mean_log(logp_a: Tensor, logp_b: Tensor) -> Tensor:
    """log L(a, b) for the logarithmic mean L = (a - b) / (ln a - ln b), L(a, a) = a,
    computed from log-probabilities without underflow."""
    hi, lo = torch.maximum(logp_a, logp_b), torch.minimum(logp_a, logp_b)
    gap = hi - lo
    close = gap < 1e-6
    safe = torch.where(close, torch.ones_like(gap), gap)
    exact = hi + torch.log(-torch.expm1(-safe)) - torch.log(safe)
    return torch.where(close, (hi + lo) / 2, exact)


def dial_select(inputs: DistillInputs, cfg: DIALConfig) -> tuple[Tensor, Tensor]:
    """DIAL-OPD token choice -> (selected (B, T) bool, score (B, T)). score_t =
    |log p_T - log p_S| * L(p_T, p_S)**beta; each row keeps its ceil(rho * n_valid)
    highest-scoring valid tokens (at least one when it has any; ties by position)."""
    lp_s, lp_t = inputs.student_logprobs.detach(), inputs.teacher_logprobs.detach()
    mask = inputs.mask.bool()
    score = (lp_t - lp_s).abs() * torch.exp(cfg.beta * log_mean_log(lp_t, lp_s))  # (B, T)
    ranked = torch.where(mask, score, torch.full_like(score, -torch.inf))
    rank = ranked.argsort(dim=-1, descending=True, stable=True).argsort(-1)  # (B, T) 0 = best
    k = torch.ceil(mask.sum(-1, keepdim=True).double() * cfg.keep_ratio - 1e-9)  # (B, 1)
    return mask & (rank < k), score


def dial_opd_loss(inputs: DistillInputs, cfg: DIALConfig) -> LossOutputs:
    """DIAL-OPD: sampled-token OPD on the `dial_select` tokens only; the others stay in
    context and carry no loss. Low-low tokens (both probabilities small) get a small
    weight even when their disagreement is large.

    Where the notes are silent: the weight is the [impl] L(p_T, p_S)**beta; the loss is
    normalised by the selected tokens (not all tokens), so its scale does not shrink
    with rho. Metrics: selected_frac, reverse_kl (over all valid tokens)."""
    selected, _ = dial_select(inputs, cfg)
    signal = inputs.teacher_logprobs.detach() - inputs.student_logprobs.detach()
    loss = _surrogate(inputs.student_logprobs, signal, selected)
    metrics = {
        "selected_frac": token_mean(selected.to(signal.dtype), inputs.mask),
        "reverse_kl": token_mean(-signal, inputs.mask),
    }
    return LossOutputs(loss, metrics)


def cal_interval(inputs: CalOPDInputs, cfg: CalOPDConfig) -> tuple[Tensor, Tensor]:
    """Teacher self-shift interval (lo, hi), each (B, T): centre log p_T minus/plus the
    largest downward/upward probe shift, times the amplification coefficient."""
    centre = inputs.teacher_logprobs.detach()
    shifts = torch.stack([inputs.teacher_pos_logprobs, inputs.teacher_neg_logprobs]).detach() - centre  # (2, B, T)
    up = shifts.amax(0).clamp(min=0)
    down = (-shifts).amax(0).clamp(min=0)
    return centre - cfg.amplification * down, centre + cfg.amplification * up


def cal_opd_loss(inputs: CalOPDInputs, cfg: CalOPDConfig) -> LossOutputs:
    """Cal-OPD: a student log-prob inside the teacher's self-shift interval gives no
    signal; outside it, the signal is the residual to the nearest boundary,
    clamp(log p_S, lo, hi) - log p_S, which has the sign of the OPD signal because
    lo <= log p_T <= hi. Token mean over all valid tokens.

    Where the notes are silent: the interval is asymmetric (each side its own largest
    shift) and the amplification default is 1. Metrics: kept_signal_frac = sum |residual|
    / sum |log p_T - log p_S| (signal, not tokens), reverse_kl."""
    lo, hi = cal_interval(inputs, cfg)
    lp_s = inputs.student_logprobs.detach()
    residual = torch.minimum(torch.maximum(lp_s, lo), hi) - lp_s  # (B, T)
    loss = _surrogate(inputs.student_logprobs, residual, inputs.mask)
    raw = inputs.teacher_logprobs.detach() - lp_s
    metrics = {
        "kept_signal_frac": token_mean(residual.abs(), inputs.mask) / token_mean(raw.abs(), inputs.mask).clamp(min=1e-12),
        "reverse_kl": token_mean(-raw, inputs.mask),
    }
    return LossOutputs(loss, metrics)


def gjsd_signal(student_logprobs: Tensor, teacher_logprobs: Tensor, beta: float) -> Tensor:
    """Per-token signal whose surrogate gradient is -grad JSD_beta(p_S, p_T) in expectation:
    beta * (log M(y) - log p_S(y)), M = beta * p_S + (1 - beta) * p_T, y ~ p_S. (The
    derivative of the generalised JSD w.r.t. p_S(y) is beta * log(p_S / M) + const.)"""
    lp_s = student_logprobs.detach()
    log_m = torch.logaddexp(math.log(beta) + lp_s, math.log(1 - beta) + teacher_logprobs.detach())
    return beta * (log_m - lp_s)


def attract_repel_loss(inputs: ContrastInputs, cfg: AttractRepelConfig) -> LossOutputs:
    """Contrastive self-distillation: minimise attract_weight * JSD(p_S, T+) -
    repel_weight * JSD(p_S, T-), where T+ / T- are the frozen teacher given the correct /
    another wrong solution, each estimated on the sampled tokens (`gjsd_signal`). With
    equal weights the teacher's shared context-induced shift largely cancels; the JSD
    bounds the repel term, which reverse KL would not.

    Departs from the paper: the JSD mixture weight (beta) and the exact per-token form are
    not in the notes; arms attract-only / repel-only are weights (1, 0) / (0, 1). Use it on
    incorrect responses only, as the paper does (the caller filters). Metric
    teacher_margin: token mean of log T+ - log T-."""
    lp_s = inputs.student_logprobs
    attract = gjsd_signal(lp_s, inputs.teacher_pos_logprobs, cfg.jsd_beta)  # (B, T)
    repel = gjsd_signal(lp_s, inputs.teacher_neg_logprobs, cfg.jsd_beta)  # (B, T)
    signal = cfg.attract_weight * attract - cfg.repel_weight * repel
    loss = _surrogate(lp_s, signal, inputs.mask)
    margin = (inputs.teacher_pos_logprobs - inputs.teacher_neg_logprobs).detach()
    return LossOutputs(loss, {"teacher_margin": token_mean(margin, inputs.mask)})
