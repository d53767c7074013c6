"""Named normalisations of per-token values. Every divisor is clamped to at least 1, so an
empty mask gives 0, never NaN, and values under a False mask never reach the result."""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor


def token_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Sum over every valid token of the batch / number of valid tokens. x, mask: (B, T)."""
    x = torch.where(mask.bool(), x, torch.zeros_like(x))
    return x.sum() / mask.sum().clamp(min=1).to(x.dtype)


def seq_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean over each sequence's valid tokens, then mean over the non-empty sequences."""
    x = torch.where(mask.bool(), x, torch.zeros_like(x))
    counts = mask.sum(-1)  # (B,)
    per_seq = x.sum(-1) / counts.clamp(min=1).to(x.dtype)  # (B,)
    nonempty = (counts > 0).to(x.dtype)  # (B,)
    return (per_seq * nonempty).sum() / nonempty.sum().clamp(min=1)


def seq_sum_constant(x: Tensor, mask: Tensor, norm_tokens: int) -> Tensor:
    """Sum over valid tokens / (B * norm_tokens): a length-independent constant (Dr. GRPO)."""
    x = torch.where(mask.bool(), x, torch.zeros_like(x))
    return x.sum() / (x.shape[0] * norm_tokens)


def reducer(aggregation: str, norm_tokens: int) -> Callable[[Tensor, Tensor], Tensor]:
    """The (x, mask) -> scalar normalisation named by `aggregation`, chosen once."""
    return {
        "token_mean": token_mean,
        "seq_mean": seq_mean,
        "seq_sum_constant": lambda x, mask: seq_sum_constant(x, mask, norm_tokens),
    }[aggregation]
