"""STRIDE as a method of the `opd` loop, pure functions of their arguments (no store, no
Prefect): multi-turn chain episodes of the student, scored per turn by the teacher,
stopped early when teacher support collapses, restarted next time from a per-problem
prefix buffer. The buffer is explicit state: `stride_step` takes one and returns the
next; `buffer_state` / `load_buffer` turn it into JSON-able data, which `loop_step`
keeps in the loop's method state so it rides in the chunk's checkpoint and a resumed
run restarts exactly where it left off.

One optimizer step (`stride_step`), following the paper's Algorithm 1:

    draw episodes (seeded by run seed and step)
    per episode in the buffer: restart at the weakest turn of its leading run of turns
        with mean teacher log-prob >= pass_threshold, reusing the turns before it
    the student plays the remaining turns; after every round of turns the teacher scores
        the transcripts and an episode stops once the token-weighted mean teacher
        log-prob of its NEW turns falls below stop_threshold
    OPD (sampled-token reverse KL) on the new turns' tokens, the stopping turn included;
        observations and the reused prefix carry no loss; one AdamW step
    write each played trajectory and its per-turn teacher scores to the buffer

Departs from the paper:
- the teacher re-reads each transcript from its start after every round (no KV cache);
  `teacher_tokens` counts the new agent tokens it scored, `teacher_forward_tokens`
  every position it forwarded;
- the restart run is the LEADING run of passing turns (see `kernels.masks.choose_restart_turn`);
- both thresholds are parameters (the notes give no values);
- an episode that stops early counts as failed in the rollout accuracy."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Optional, Sequence

import torch
from torch import Tensor, nn

from kernels.configs import OPDConfig, STRIDEConfig
from kernels.distill import opd_loss
from kernels.masks import choose_restart_turn, stride_loss_mask, stride_stop_turn
from kernels.model import token_logprobs
from kernels.types import DistillInputs
from schemas.ids import seed_for
from schemas.post_training import STRIDEMethodConfig
from suites.arith import Arith
from suites.arith.episodes import Episode, EpisodeBatch, StopRule, play
from suites.arith.tokenizer import Tokenizer
from tasks.loops.opd.opd_rollouts import StepContext
from tasks.training.policy import StepResult

GREEDY = 1e-4
"""Evaluation temperature, with a fixed generator (as `tasks.training.policy.GREEDY`)."""


@dataclass(frozen=True)
class BufferEntry:
    """A problem's last played trajectory: agent turn ids and mean teacher log-prob per turn."""

    turns: tuple[tuple[int, ...], ...]
    scores: tuple[float, ...]


PrefixBuffer = dict[str, BufferEntry]
"""Problem prompt -> its last trajectory."""

STATE_KEY = "stride_buffer"
"""Where the buffer lives in the loop's method state."""


@dataclass
class StrideContext:
    """What a STRIDE step reads besides the buffer; the models and optimizer are updated in place."""

    student: nn.Module
    optimizer: torch.optim.Optimizer
    teacher: nn.Module
    pool: Sequence[Episode]
    cfg: STRIDEMethodConfig
    seed: int
    episodes_per_step: int


def buffer_state(buffer: PrefixBuffer) -> dict:
    """JSON-able form of the buffer (for a checkpoint's meta)."""
    return {k: {"turns": [list(t) for t in e.turns], "scores": list(e.scores)} for k, e in sorted(buffer.items())}


def load_buffer(state: Optional[dict]) -> PrefixBuffer:
    """Inverse of `buffer_state`; None or {} is the empty buffer."""
    return {k: BufferEntry(tuple(tuple(t) for t in v["turns"]), tuple(v["scores"])) for k, v in (state or {}).items()}


def kernel_config(cfg: STRIDEMethodConfig) -> STRIDEConfig:
    return STRIDEConfig(stop_threshold=cfg.stop_threshold, pass_threshold=cfg.pass_threshold)


def restart_plan(
    buffer: PrefixBuffer, eps: Sequence[Episode], cfg: STRIDEMethodConfig
) -> tuple[list[int], list[list[list[int]]]]:
    """Per episode: (turn to regenerate from, agent turns reused before it). Episodes not
    in the buffer, or with prefix_reuse off, start at turn 0 with nothing reused."""
    width = max(e.n_turns for e in eps)
    scores = torch.full((len(eps), width), -torch.inf, dtype=torch.float64)
    present = torch.zeros((len(eps), width), dtype=torch.bool)
    entries = [buffer.get(e.problem.prompt) if cfg.prefix_reuse else None for e in eps]
    for b, entry in enumerate(entries):
        if entry is not None:
            scores[b, : len(entry.scores)] = torch.tensor(entry.scores, dtype=torch.float64)
            present[b, : len(entry.scores)] = True
    restart = choose_restart_turn(scores, present, kernel_config(cfg)).tolist()
    reuse = [[list(t) for t in entry.turns[:r]] if entry is not None else [] for entry, r in zip(entries, restart)]
    return restart, reuse


def teacher_turn_scores(teacher: nn.Module, played: EpisodeBatch, width: int) -> tuple[Tensor, Tensor, Tensor]:
    """Teacher log-probs of the transcripts -> (per token (B, T-1) aligned with tokens[:, 1:],
    per-turn sum (B, width), per-turn agent-token count (B, width)); observation tokens
    are in no turn."""
    on = next(teacher.parameters()).device
    tokens, mask = played.tokens.to(on), played.mask.to(on)
    lp = token_logprobs(teacher, tokens, mask)  # (B, T-1)
    turn = played.turn_ids[:, 1:].to(on)
    agent = (turn >= 0) & mask[:, 1:]
    slot = torch.where(agent, turn, torch.full_like(turn, width))  # non-agent tokens go to a spare slot
    sums = torch.zeros(lp.shape[0], width + 1, dtype=lp.dtype, device=on)
    sums = sums.scatter_add(1, slot, torch.where(agent, lp, 0.0))
    counts = torch.zeros_like(sums).scatter_add(1, slot, agent.to(lp.dtype))
    return lp, sums[:, :width], counts[:, :width]


class TeacherStop:
    """The early-stop rule `play` calls after each round of turns; counts the teacher's work."""

    def __init__(self, teacher: nn.Module, restart: Tensor, cfg: STRIDEMethodConfig, width: int):
        self.teacher, self.restart, self.cfg, self.width = teacher, restart, kernel_config(cfg), width
        self.forward_tokens = 0

    def __call__(self, played: EpisodeBatch) -> list[bool]:
        with torch.no_grad():
            _, sums, counts = teacher_turn_scores(self.teacher, played, self.width)
        self.forward_tokens += int(played.mask.sum())
        return (stride_stop_turn(sums, counts, self.restart.to(sums.device), self.cfg) < self.width).tolist()


def draw_episodes(pool: Sequence[Episode], n: int, seed: int, step: int) -> list[Episode]:
    """`n` distinct episodes of the pool (repeats only if it is smaller), seeded by (seed, step)."""
    rng = random.Random(seed_for(seed, "stride-episodes", step))
    return rng.sample(list(pool), n) if n <= len(pool) else [rng.choice(pool) for _ in range(n)]


def stride_loss(ctx: StrideContext, played: EpisodeBatch, restart: Tensor, width: int) -> tuple[Tensor, Tensor, dict]:
    """OPD loss on the new turns -> (loss, per-turn mean teacher log-prob (B, width), metrics)."""
    on = next(ctx.student.parameters()).device
    with torch.no_grad():
        lp_t, sums, counts = teacher_turn_scores(ctx.teacher, played, width)
    restart = restart.to(on)
    no_stop = torch.full_like(restart, width)
    stop = stride_stop_turn(sums, counts, restart, kernel_config(ctx.cfg)) if ctx.cfg.early_stop else no_stop
    tokens, mask = played.tokens.to(on), played.mask.to(on)
    loss_mask = stride_loss_mask(played.turn_ids[:, 1:].to(on), played.is_obs[:, 1:].to(on), restart, stop, mask[:, 1:])
    lp_s = token_logprobs(ctx.student, tokens, mask)  # (B, T-1) with grad, sampling temperature 1
    out = opd_loss(DistillInputs(lp_s, lp_t, loss_mask), OPDConfig())
    metrics = {
        "stops": float((stop < width).sum()),
        "loss_tokens": float(loss_mask.sum()),
        "reverse_kl": float(out.metrics["reverse_kl"]),
    }
    return out.loss, sums / counts.clamp(min=1), metrics


def stride_step(ctx: StrideContext, buffer: PrefixBuffer, step: int) -> tuple[StepResult, PrefixBuffer]:
    """One STRIDE step (module docstring) -> (result, the next buffer); deterministic in
    (weights, buffer, seed, step) on CPU. `tokens` of the result is the generated agent tokens."""
    start = time.perf_counter()
    eps = draw_episodes(ctx.pool, ctx.episodes_per_step, ctx.seed, step)
    width = max(e.n_turns for e in eps)
    restart, reuse = restart_plan(buffer, eps, ctx.cfg)
    restart_t = torch.tensor(restart)
    on = next(ctx.student.parameters()).device
    generator = torch.Generator(device=on).manual_seed(seed_for(ctx.seed, "stride-rollouts", step))
    rule = TeacherStop(ctx.teacher, restart_t, ctx.cfg, width)
    stop: Optional[StopRule] = rule if ctx.cfg.early_stop else None
    played = play(ctx.student, Tokenizer(), eps, ctx.cfg.max_turn_tokens, 1.0, generator, reuse, stop)
    loss, turn_means, metrics = stride_loss(ctx, played, restart_t, width)
    ctx.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(ctx.student.parameters(), 1.0)
    if metrics["loss_tokens"] > 0:
        ctx.optimizer.step()
    new_tokens = sum(len(t) for ts, r in zip(played.turns, restart) for t in ts[r:])
    next_buffer = dict(buffer)
    for b, e in enumerate(eps):
        n = len(played.turns[b])
        turns = tuple(tuple(t) for t in played.turns[b])
        next_buffer[e.problem.prompt] = BufferEntry(turns, tuple(turn_means[b, :n].tolist()))
    metrics.update(
        gen_tokens=float(new_tokens), teacher_tokens=float(new_tokens),
        teacher_forward_tokens=float(rule.forward_tokens + int(played.mask.sum())),
        restarts=float(sum(r > 0 for r in restart)), reused_turns=float(sum(restart)),
        new_turns=float(sum(len(ts) - r for ts, r in zip(played.turns, restart))),
        accuracy=float(sum(played.success) / len(eps)), grad_norm=float(grad_norm),
        loss_token_frac=metrics["loss_tokens"] / max(1, new_tokens),
    )
    return StepResult(float(loss.detach()), metrics, new_tokens, len(eps), time.perf_counter() - start), next_buffer


def episode_accuracy(model: nn.Module, eps: Sequence[Episode], max_turn_tokens: int) -> float:
    """Share of `eps` the model solves end to end when playing near-greedily (fixed generator)."""
    on = next(model.parameters()).device
    generator = torch.Generator(device=on).manual_seed(0)
    played = play(model, Tokenizer(), eps, max_turn_tokens, GREEDY, generator)
    return sum(played.success) / max(len(eps), 1)


def chain_episodes(suite: Arith) -> list[Episode]:
    """The train split's chain problems as multi-turn episodes (STRIDE's pool)."""
    return [Episode.of(p) for p in suite.problems("train") if p.category == "chain"]


def loop_step(ctx: StepContext, step: int) -> StepResult:
    """One STRIDE step of the opd loop (method "stride", parameters `ctx.cfg.stride`):
    `prompts_per_step` distinct chain episodes of the train split; reads and replaces the
    buffer in ctx.state["stride_buffer"]."""
    pool = chain_episodes(ctx.suite)
    if not pool:
        raise ValueError("STRIDE plays chain episodes but the run's train split has none; add 'chain' to categories")
    cfg = ctx.cfg
    inner = StrideContext(ctx.student, ctx.optimizer, ctx.teacher, pool, cfg.stride, ctx.seed, cfg.prompts_per_step)
    result, buffer = stride_step(inner, load_buffer(ctx.state.get(STATE_KEY)), step)
    ctx.state[STATE_KEY] = buffer_state(buffer)
    return result
