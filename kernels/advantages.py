"""Advantage estimators and the group filter. Rewards are (G, n): G groups (prompts) of n
rollouts. Degenerate groups (all rewards equal) get exactly zero advantage, never NaN."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor


def grpo_advantages(rewards: Tensor, eps: float = 1e-6) -> Tensor:
    """GRPO: (r - mean_group) / (std_group + eps), (G, n) -> (G, n).

    Departs from the paper: the std is the population std (correction=0), so a group of
    one rollout gives 0 instead of NaN; the paper does not name the estimator."""
    mean = rewards.mean(-1, keepdim=True)  # (G, 1)
    std = rewards.std(-1, correction=0, keepdim=True)  # (G, 1)
    return (rewards - mean) / (std + eps)


def dr_grpo_advantages(rewards: Tensor) -> Tensor:
    """Dr. GRPO: r - mean_group, no std division, (G, n) -> (G, n). Pair it with the
    `seq_sum_constant` aggregation of the policy loss, as the paper does."""
    return rewards - rewards.mean(-1, keepdim=True)


def filter_groups(outcomes: Tensor, rewards: Tensor, by: Literal["outcome", "shaped"]) -> Tensor:
    """Phantom Advantages: keep (G,) groups whose signal is not degenerate.

    by="outcome" reads the binary task outcome (the safe filter: all-correct and all-wrong
    groups are dropped); by="shaped" reads the composite shaped reward (the unsafe filter:
    an all-wrong group whose lengths differ passes, and std normalisation then turns the
    length differences into full-size "phantom" advantages). outcomes, rewards: (G, n).
    A group is degenerate when max == min exactly; the paper's dynamic sampling tests
    std > 0, which is the same set."""
    signal = {"outcome": outcomes, "shaped": rewards}[by].to(rewards.dtype)  # (G, n)
    return signal.amax(-1) > signal.amin(-1)  # (G,)


def gae(rewards: Tensor, values: Tensor, mask: Tensor, gamma: float = 1.0, lam: float = 1.0) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimation over (B, T) tokens -> (advantages, returns), both
    (B, T) and 0 where ~mask.

    delta_t = r_t + gamma * V_next - V_t and A_t = delta_t + gamma * lam * A_next, where
    "next" is the next *valid* token: masked positions (padding, environment observations)
    are skipped rather than treated as episode ends, and the value after the last valid
    token is 0 (terminal). Rewards at masked positions are ignored. With gamma = lam = 1
    and one terminal reward R, A_t = R - V_t and returns = R (PACT's setting)."""
    values = values.detach()
    adv = torch.zeros_like(values)
    running = torch.zeros_like(values[:, 0])  # (B,)
    next_value = torch.zeros_like(values[:, 0])  # (B,)
    for t in reversed(range(values.shape[1])):
        m = mask[:, t].bool()
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        running = torch.where(m, delta + gamma * lam * running, running)
        next_value = torch.where(m, values[:, t], next_value)
        adv[:, t] = torch.where(m, running, torch.zeros_like(running))
    returns = (adv + values) * mask.to(values.dtype)
    return adv, returns
