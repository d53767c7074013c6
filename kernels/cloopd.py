"""CLOOPD: the teacher scores a batch once; the student then takes 1-3 clipped passes on
the frozen signal, and TPMR decides whether a batch earns the third pass."""

from __future__ import annotations

import torch
from torch import Tensor

from kernels.configs import CLOOPDConfig, PolicyLossConfig, TPMRConfig
from kernels.policy_loss import policy_loss
from kernels.reduce import token_mean
from kernels.types import FrozenBatch, LossOutputs, PolicyInputs, TPMRInputs


def mixture_logprob(student_logprobs: Tensor, teacher_logprobs: Tensor, alpha: Tensor) -> Tensor:
    """log q_alpha(y) of the ARITHMETIC mixture q = (1 - alpha) p_S + alpha p_T, from the
    sampled tokens' log-probs; alpha broadcasts (a (A, 1, 1) grid gives (A, B, T))."""
    return torch.logaddexp(torch.log1p(-alpha) + student_logprobs, torch.log(alpha) + teacher_logprobs)


def freeze_batch(student_logprobs: Tensor, teacher_logprobs: Tensor, mask: Tensor, cfg: CLOOPDConfig) -> FrozenBatch:
    """Adaptive alpha: the largest alpha on linspace(0, 1, alpha_grid) whose per-token
    reward r = log q_alpha - log p_S keeps the sampled KL proxy mean(-r) <= kl_bound and
    the tail_quantile of r >= -tail_bound (alpha = 0 always qualifies). Then freeze the
    old log-probs, the target and the advantages r for every pass.

    Departs from the paper: both bounds and the quantile are parameters (values not in
    the notes); a grid replaces the paper's unspecified search; alpha is one per batch."""
    lp_s, lp_t, mask = student_logprobs.detach(), teacher_logprobs.detach(), mask.bool()
    grid = torch.linspace(0.0, 1.0, cfg.alpha_grid, dtype=lp_s.dtype, device=lp_s.device)  # (A,)
    log_q = mixture_logprob(lp_s, lp_t, grid[:, None, None])  # (A, B, T)
    reward = log_q - lp_s
    n = mask.sum().clamp(min=1)
    kl = -torch.where(mask, reward, torch.zeros_like(reward)).sum((1, 2)) / n  # (A,)
    flat = torch.where(mask, reward, torch.full_like(reward, torch.inf)).flatten(1).sort(-1).values  # (A, B*T)
    k = (cfg.tail_quantile * (n - 1)).floor().long()  # lower-quantile index among the n valid tokens
    tail = flat[:, k]  # (A,)
    feasible = (kl <= cfg.kl_bound) & (tail >= -cfg.tail_bound)  # (A,)
    best = torch.where(feasible, torch.arange(cfg.alpha_grid, device=lp_s.device), 0).amax().view(1)
    target = log_q.index_select(0, best).squeeze(0)  # (B, T)
    advantages = torch.where(mask, target - lp_s, torch.zeros_like(lp_s))
    return FrozenBatch(lp_s, target, advantages, mask, grid[best].squeeze(0), kl[best].squeeze(0))


def pass_inputs(logprobs: Tensor, frozen: FrozenBatch) -> PolicyInputs:
    """The current student's log-probs (B, T) on the frozen tokens, paired with the frozen signal."""
    return PolicyInputs(logprobs, frozen.old_logprobs, frozen.advantages, frozen.mask)


def cloopd_pass_loss(inputs: PolicyInputs, cfg: CLOOPDConfig) -> LossOutputs:
    """One pass on the frozen batch (`pass_inputs`): the PPO clipped surrogate with the
    frozen advantages, ratio against the frozen old log-probs (1 on the first pass),
    symmetric clip, token mean. No teacher call and no new target between passes.
    Departs from the paper: the clip value is not in the notes (default 0.2)."""
    return policy_loss(inputs, PolicyLossConfig(clip_low=cfg.clip, clip_high=cfg.clip))


def pass_progress(before: Tensor, after: Tensor, frozen: FrozenBatch, cfg: CLOOPDConfig) -> Tensor:
    """Realised progress of a pass, measured by re-forwarding the student on the frozen
    tokens: S(after) - S(before) with the pessimistic clipped surrogate
    S = token mean of min(rho A, clip(rho) A), rho = exp(logp - old logp). Clipping
    makes it conservative: moves beyond the trust range earn nothing. () tensor."""

    def surrogate(logprobs: Tensor) -> Tensor:
        ratio = torch.exp(logprobs.detach() - frozen.old_logprobs)
        clipped = ratio.clamp(1.0 - cfg.clip, 1.0 + cfg.clip)
        return token_mean(torch.minimum(ratio * frozen.advantages, clipped * frozen.advantages), frozen.mask)

    return surrogate(after) - surrogate(before)


def tpmr_third_pass(inputs: TPMRInputs, cfg: TPMRConfig) -> tuple[Tensor, dict[str, Tensor]]:
    """TPMR: give this batch a third pass when pass 2's conservative progress per student
    token exceeds min_rate AND the token budget still covers one more pass AND the batch
    stays within the third-pass quota AND pass 2 was stable (approx KL <= max_pass_kl).
    Returns (() bool decision, the rate and each check as () tensors).

    Where the notes are silent: the form of each check and all thresholds. The paper found
    TPMR below a random control with a matched budget; the control is the caller's draw."""
    rate = inputs.progress / inputs.student_tokens.clamp(min=1)
    checks = {
        "rate": rate,
        "rate_ok": rate > cfg.min_rate,
        "budget_ok": inputs.tokens_used + inputs.student_tokens <= cfg.token_budget,
        "quota_ok": inputs.third_passes + 1 <= cfg.quota * inputs.batches,
        "stable_ok": inputs.pass_kl <= cfg.max_pass_kl,
    }
    decision = checks["rate_ok"] & checks["budget_ok"] & checks["quota_ok"] & checks["stable_ok"]
    return decision, checks
