"""Token masks: Two-End Trace Supervision (head+tail kept, middle masked or deleted) and
STRIDE (early stop on teacher support, restart at the weakest qualifying turn).

Step and turn ids are per-token, 0-based and consecutive within a row, -1 on tokens
that belong to no step or turn (prompt, answer, padding); hence ids are < T."""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from kernels.configs import STRIDEConfig, TwoEndConfig


def _per_step(step_ids: Tensor, values: Tensor, reduce: str) -> Tensor:
    """Reduce per-token values (B, T) into per-step slots (B, T + 1); slot T collects -1 tokens."""
    B, T = step_ids.shape
    idx = torch.where(step_ids >= 0, step_ids, torch.full_like(step_ids, T))
    out = torch.zeros(B, T + 1, dtype=values.dtype, device=values.device)
    return out.scatter_reduce(1, idx, values, reduce=reduce, include_self=False)


def two_end_keep(step_ids: Tensor, cfg: TwoEndConfig) -> Tensor:
    """Two-End: (B, T) bool, False on the middle steps, True elsewhere (head, tail and
    tokens outside the trace, e.g. the final answer). A step is "middle" when the centre
    of its token span, as a fraction of the row's trace tokens, lies in
    [head_frac, head_frac + middle_frac). Use `mask & keep` as the RL/OPD loss mask (the
    middle stays in context) and `compact(tokens, keep)` to delete it for SFT.

    Departs from the paper: steps are whatever the caller marks (the paper: paragraphs);
    the head/tail split (default 40/40) is not in the notes."""
    in_trace = step_ids >= 0
    through = in_trace.long().cumsum(-1).to(torch.float64)  # (B, T) trace tokens up to and including t
    start = _per_step(step_ids, through - 1, "amin")  # (B, T + 1)
    end = _per_step(step_ids, through, "amax")
    total = in_trace.sum(-1, keepdim=True).clamp(min=1).to(torch.float64)  # (B, 1)
    centre = ((start + end) / 2 / total).gather(1, step_ids.clamp(min=0))  # (B, T)
    middle = in_trace & (centre >= cfg.head_frac) & (centre < cfg.head_frac + cfg.middle_frac)
    return ~middle


def random_step_keep(step_ids: Tensor, keep: Tensor, generator: Optional[torch.Generator] = None) -> Tensor:
    """Two-End's control: mask as many whole steps per row as `keep` masks, chosen
    uniformly at random among the row's steps. Returns (B, T) bool like `two_end_keep`."""
    B, T = step_ids.shape
    ones = torch.ones_like(step_ids, dtype=torch.float64)
    present = _per_step(step_ids, ones, "amax")[:, :T] > 0  # (B, T) step s exists in row b
    masked = _per_step(step_ids, (~keep).to(torch.float64), "amax")[:, :T] > 0
    n_masked = masked.sum(-1, keepdim=True)  # (B, 1)
    draw = torch.rand(B, T, generator=generator, dtype=torch.float64, device=step_ids.device)
    draw = torch.where(present, draw, torch.full_like(draw, 2.0))
    chosen = draw.argsort(-1).argsort(-1) < n_masked  # (B, T) per step
    hit = chosen.gather(1, step_ids.clamp(min=0))
    return ~((step_ids >= 0) & hit)


def compact(tokens: Tensor, keep: Tensor, pad_id: int) -> tuple[Tensor, Tensor]:
    """Delete the ~keep tokens and left-align the rest (SFT's head+tail join) ->
    (tokens (B, T), mask (B, T)); freed positions hold pad_id with mask False."""
    order = (~keep).long().argsort(dim=-1, stable=True)  # kept tokens first, in order
    new_mask = keep.gather(1, order)
    return torch.where(new_mask, tokens.gather(1, order), torch.full_like(tokens, pad_id)), new_mask


def stride_stop_turn(turn_lp_sum: Tensor, turn_tokens: Tensor, restart: Tensor, cfg: STRIDEConfig) -> Tensor:
    """STRIDE early stop -> (B,) absolute index of the turn that triggers the stop, or K
    when none does. turn_lp_sum (B, K): sum of teacher log-probs of each turn's student
    tokens (observations excluded); turn_tokens (B, K): their counts; restart (B,): first
    newly generated turn. The running mean is token-weighted over the new turns only:
    sum_{restart<=j<=k} lp_sum_j / sum tokens_j < stop_threshold stops at turn k.
    Applied after each turn during generation, the first stop index is the same."""
    K = turn_lp_sum.shape[1]
    turns = torch.arange(K, device=turn_lp_sum.device)
    new = (turns[None, :] >= restart[:, None]) & (turn_tokens > 0)  # (B, K)
    zero = torch.zeros_like(turn_lp_sum)
    cum_lp = torch.where(new, turn_lp_sum, zero).cumsum(-1)
    cum_n = torch.where(new, turn_tokens.to(zero.dtype), zero).cumsum(-1)
    below = new & (cum_lp / cum_n.clamp(min=1) < cfg.stop_threshold)  # (B, K)
    first = torch.where(below, turns.expand_as(below), torch.full_like(below, K, dtype=torch.long))
    return first.amin(-1)


def stride_loss_mask(turn_ids: Tensor, is_obs: Tensor, restart: Tensor, stop: Tensor, mask: Tensor) -> Tensor:
    """STRIDE's OPD loss mask (B, T): student tokens of the new turns restart..stop,
    the stopping turn included (its low teacher support is itself the correction);
    observation tokens and the reused prefix excluded."""
    new = (turn_ids >= restart[:, None]) & (turn_ids <= stop[:, None]) & (turn_ids >= 0)
    return mask.bool() & new & ~is_obs.bool()


def choose_restart_turn(turn_scores: Tensor, turn_mask: Tensor, cfg: STRIDEConfig) -> Tensor:
    """STRIDE prefix buffer -> (P,) turn to regenerate from, per buffered problem.
    turn_scores (P, K): mean teacher log-prob per turn of the stored trajectory;
    turn_mask (P, K): its turns (all False for a problem not in the buffer).
    The qualifying run is the leading run of turns with score >= pass_threshold; restart
    at its weakest turn (lowest score, earliest on ties), reusing the context before it.
    No qualifying turn (or no buffered trajectory) -> 0, a fresh start.

    Departs from the paper's wording "longest run of consecutive passing turns": the run
    is read as the leading one, since the context reused before the restart turn must
    itself have passed."""
    passing = turn_mask.bool() & (turn_scores >= cfg.pass_threshold)  # (P, K)
    leading = passing.long().cumprod(-1).bool()
    scores = torch.where(leading, turn_scores, torch.full_like(turn_scores, torch.inf))
    return scores.argmin(-1)  # all-inf rows give 0
