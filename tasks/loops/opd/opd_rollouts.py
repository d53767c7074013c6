"""The shared half of every on-policy distillation step, as pure functions (no store, no
Prefect): draw prompts, sample student rollouts, re-read them under the teacher with a
context, re-read them under the student with grad, build the loss mask, take the
optimizer step and report the step's metrics. `tasks.loops.opd.opd_methods` composes these into
one function per method.

Rows are ordered group by group: G prompts x n rollouts, so `view(G, n)` gives the groups.
Log-probs are (B, N) over the generated tokens, aligned with the rollout's mask (eos
included, zero after it). Sampling and scoring both run at temperature 1, so the
rollouts are exactly on-policy for the one update they feed."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
from torch import Tensor, nn

from kernels.configs import TwoEndConfig
from kernels.masks import two_end_keep
from kernels.model import sample, token_logprobs
from kernels.reduce import token_mean
from kernels.types import LossOutputs
from schemas.ids import seed_for
from schemas.post_training import DistillRunConfig
from suites.arith import Arith
from suites.arith.contexts import contexts
from suites.arith.prompts import Prompt, refill
from suites.arith.tasks import Problem
from suites.arith.tokenizer import EOS, Tokenizer, left_pad, splice
from suites.arith.verify import is_correct
from tasks.training.policy import StepResult

TOKENIZER = Tokenizer()
STEP_END, ANSWER_MARK = TOKENIZER.encode(";")[0], TOKENIZER.encode("#")[0]


@dataclass(frozen=True)
class StepContext:
    """Everything one distillation step reads: the models, the student's optimizer, the
    prompt pool, the run's parameters and suite. The teacher is frozen (eval, no grad).
    `state` is the method's own JSON-able state across steps (e.g. a prefix buffer): a
    step may replace its entries; it rides in the chunk's checkpoint, so a resumed run
    restarts with it."""

    student: nn.Module
    teacher: nn.Module
    optimizer: torch.optim.Optimizer
    pool: Sequence[Prompt]
    cfg: DistillRunConfig
    seed: int
    suite: Arith
    state: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Rollouts:
    """One step's student rollouts: G prompts x n samples, rows group by group."""

    prompts: list[str]  # (B,) the prompt text of each row
    problems: list[Optional[Problem]]  # (B,) its problem; None for an unparsed teacher-written prompt
    tokens: Tensor  # (B, N) generated ids, eos-filled after the first eos
    mask: Tensor  # (B, N) bool, generated tokens up to and including eos
    sampled_logprobs: Tensor  # (B, N) the sampler's log-probs of its tokens (0 after eos)
    texts: list[str]  # (B,) decoded responses
    outcomes: Tensor  # (B,) exact match 0/1 (0 without a problem to check against)
    groups: int  # G
    n: int  # rollouts per prompt


def rollout(ctx: StepContext, step: int) -> Rollouts:
    """Draw G prompts from the pool (seeded by step) and sample n responses each."""
    cfg, on = ctx.cfg, next(ctx.student.parameters()).device
    drawn = [p for p in refill(ctx.pool, cfg.prompts_per_step, step, ctx.seed) for _ in range(cfg.rollouts)]
    texts_in, problems = [p.text for p in drawn], [p.problem for p in drawn]
    prompts, prompt_mask = left_pad([TOKENIZER.encode_prompt(t) for t in texts_in])
    generator = torch.Generator(device=on).manual_seed(seed_for(ctx.seed, "opd-rollouts", step))
    out = sample(ctx.student, prompts.to(on), cfg.max_new_tokens, 1.0, generator, prompt_mask.to(on), EOS)
    tokens = out.tokens[:, prompts.shape[1]:]
    texts = [TOKENIZER.decode(row) for row in tokens.tolist()]
    outcomes = torch.tensor([float(p is not None and is_correct(t, p.answer)) for t, p in zip(texts, problems)],
                            device=on)
    return Rollouts(texts_in, problems, tokens, out.mask.bool(), out.logprobs, texts, outcomes, cfg.prompts_per_step,
                    cfg.rollouts)


def reread(model: nn.Module, rollouts: Rollouts, hints: Sequence[Optional[str]]) -> tuple[Tensor, int]:
    """Log-probs (B, N) of the rollouts' tokens under `model` reading each row's prompt
    with its hint (None: the plain prompt), and the number of tokens it read. Keeps the
    graph: wrap in `torch.no_grad()` for the teacher."""
    on = next(model.parameters()).device
    rows = [TOKENIZER.encode_prompt(p, h) for p, h in zip(rollouts.prompts, hints)]
    prompts, prompt_mask = left_pad(rows)
    tokens, mask = splice(prompts.to(on), prompt_mask.to(on), rollouts.tokens.to(on), rollouts.mask.to(on))
    lp = token_logprobs(model, tokens, mask)[:, prompts.shape[1] - 1:]  # (B, N) scores the generated tokens
    return lp, int(mask.sum())


def teacher_logprobs(ctx: StepContext, rollouts: Rollouts, hints: Sequence[Optional[str]]) -> tuple[Tensor, int]:
    with torch.no_grad():
        return reread(ctx.teacher, rollouts, hints)


def student_logprobs(ctx: StepContext, rollouts: Rollouts) -> Tensor:
    """The student's log-probs of its own sampled tokens, with grad (plain prompts)."""
    return reread(ctx.student, rollouts, [None] * len(rollouts.prompts))[0]


def centre_hints(cfg: DistillRunConfig, rollouts: Rollouts) -> list[Optional[str]]:
    """The configured privileged context of each row (Self-Teacher Context level), or None
    (also for a prompt without a problem, which has no context to compile)."""
    if cfg.teacher_context == "none":
        return [None] * len(rollouts.prompts)
    return [None if p is None else contexts(p)[cfg.teacher_context] for p in rollouts.problems]


def trace_step_ids(tokens: Tensor, mask: Tensor) -> Tensor:
    """Two-End step ids (B, N) of worked responses: steps are separated by ';' (which
    ends its step); the answer from '#' on, eos and padding are -1 (outside the trace)."""
    ids = torch.full_like(tokens, -1)
    for b, row in enumerate(tokens.tolist()):
        step = 0
        for t, tok in enumerate(row):
            if not mask[b, t] or tok in (ANSWER_MARK, EOS):
                break
            ids[b, t] = step
            step += tok == STEP_END
    return ids


def loss_mask(cfg: DistillRunConfig, rollouts: Rollouts) -> Tensor:
    """Tokens that may carry loss (B, N): every generated token, or with `two_end` all
    but the middle steps (head and tail equal, *not specified*); masked tokens stay in context."""
    if not cfg.two_end:
        return rollouts.mask
    band = TwoEndConfig(head_frac=(1 - cfg.two_end_middle_frac) / 2, middle_frac=cfg.two_end_middle_frac)
    keep = two_end_keep(trace_step_ids(rollouts.tokens, rollouts.mask), band).to(rollouts.mask.device)
    return rollouts.mask & keep


def finish(ctx: StepContext, rollouts: Rollouts, out: LossOutputs, mask: Tensor, teacher_tokens: int,
           start: float, extra: Optional[dict[str, Tensor]] = None) -> StepResult:
    """Backward, grad-norm clip at 1 and one AdamW step (none when no token carries loss:
    AdamW would still move on its momentum) -> the step's result and metrics."""
    ctx.optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(ctx.student.parameters(), 1.0)
    if bool(mask.any()):
        ctx.optimizer.step()
    gen = rollouts.mask
    lengths = gen.sum(-1).float()  # (B,)
    metrics = {k: float(v) for k, v in {**out.metrics, **(extra or {})}.items()}
    metrics.update(
        accuracy=float(rollouts.outcomes.mean()), length_mean=float(lengths.mean()),
        graded_frac=sum(p is not None for p in rollouts.problems) / len(rollouts.problems),
        truncated_frac=float((~(rollouts.tokens == EOS).any(-1)).float().mean()),
        loss_token_frac=float(mask.sum()) / max(1, int(gen.sum())), teacher_tokens=float(teacher_tokens),
        grad_norm=float(grad_norm),
    )
    return StepResult(float(out.loss.detach()), metrics, int(gen.sum()), len(rollouts.texts),
                      time.perf_counter() - start)


def inside_frac(student_lp: Tensor, lo: Tensor, hi: Tensor, mask: Tensor) -> Tensor:
    """Token mean of [lo <= log p_S <= hi]: the share of tokens Cal-OPD gives no signal."""
    lp = student_lp.detach()
    return token_mean(((lp >= lo) & (lp <= hi)).to(lp.dtype), mask)
