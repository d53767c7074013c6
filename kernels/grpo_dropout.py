"""GRPODropout: not every correct rollout should be used for the update."""

from __future__ import annotations

import torch
from torch import Tensor

from kernels.configs import GRPODropoutConfig
from kernels.types import DropoutSelection


def grpo_dropout(advantages: Tensor, old_seq_logprobs: Tensor, cfg: GRPODropoutConfig) -> DropoutSelection:
    """Drop the high-probability, positive-advantage rollouts predicted to reduce entropy
    most, then re-centre the kept advantages on their pi_old-weighted mean.

    advantages (G, n): group-relative advantages (e.g. `grpo_advantages`).
    old_seq_logprobs (G, n): log pi_old(y_i), summed over each rollout's tokens.

    Rule: first-order entropy effect proxy e_i = A_i * (log pi_old(y_i) - mean_j log
    pi_old(y_j)) (the [impl] proxy; the paper's exact formula is not in the notes). A
    rollout may be dropped when A_i > 0 and e_i > min_effect; up to n_drop of them per
    group, largest e_i first. Re-centring: A'_i = A_i - sum_kept w_j A_j with
    w_j = pi_old(y_j) / sum_kept pi_old (a softmax of the kept log-probs, so long
    sequences do not underflow). Dropped rollouts get A' = 0 and kept=False; leave them
    out of the loss normaliser too. All-zero groups stay all-zero.
    Departs from the paper: the threshold (min_effect) and the count (n_drop) are fixed
    parameters rather than the paper's theory-derived rule (not in the notes)."""
    adv = advantages.detach()
    lp = old_seq_logprobs.detach().to(adv.dtype)
    effect = adv * (lp - lp.mean(-1, keepdim=True))  # (G, n)
    candidate = (adv > 0) & (effect > cfg.min_effect)  # (G, n)
    score = torch.where(candidate, effect, torch.full_like(effect, -torch.inf))
    rank = score.argsort(dim=-1, descending=True, stable=True).argsort(-1)  # (G, n) 0 = largest effect
    kept = ~(candidate & (rank < cfg.n_drop))  # (G, n)
    weights = torch.softmax(lp.masked_fill(~kept, -torch.inf), dim=-1)  # (G, n), 0 on dropped
    centre = (weights * adv).sum(-1, keepdim=True)  # (G, 1)
    centred = torch.where(kept, adv - centre, torch.zeros_like(adv))
    return DropoutSelection(advantages=centred, kept=kept, entropy_effect=effect)
