"""CLOOPD as a method of the `opd` loop: `cloopd_step(ctx, step, cfg)` takes one
optimizer step's worth of work on the loop's shared rollouts (`tasks.loops.opd.opd_rollouts`), with
no store and no Prefect. The TPMR counters are run state kept in `ctx.state["cloopd"]`,
which rides in the chunk's checkpoint (`CloopdState.as_meta` / `from_meta`).

One step:

    draw prompts and sample the student's rollouts (the loop's prompt source, G x n)
    the teacher scores the batch ONCE (under the run's teacher context); adaptive alpha
        picks the arithmetic mixture target under the sampled-KL and reward-tail bounds;
        the batch, its old log-probs and advantages are frozen
    pass 1..k: clipped surrogate on the frozen advantages, one AdamW step, then a
        re-forward of the student measures the pass's conservative progress
    k = `passes` (fixed), or 2 plus a third pass chosen by TPMR or at random (control)

Departs from the paper: one AdamW step per pass (the paper's mini-batching inside a pass
is not in the notes); alpha is one per batch on a grid; all bounds and TPMR thresholds
are parameters (no values in the notes); the random control's matched budget is the
caller's choice of `random_third`. `actor_tokens` counts the student tokens trained on
(loss tokens x passes), not the re-forwards; `teacher_tokens` every position the
teacher read (prompt and response), as the loop's other methods count it."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, replace
from typing import Callable

import torch
from torch import Tensor, nn

from kernels.cloopd import cloopd_pass_loss, freeze_batch, pass_inputs, pass_progress, tpmr_third_pass
from kernels.configs import CLOOPDConfig, TPMRConfig
from kernels.reduce import token_mean
from kernels.types import FrozenBatch, TPMRInputs
from schemas.ids import seed_for
from schemas.post_training import CLOOPDMethodConfig
from tasks.loops.opd.opd_rollouts import (
    StepContext,
    centre_hints,
    loss_mask,
    rollout,
    student_logprobs,
    teacher_logprobs,
)
from tasks.training.policy import StepResult

STATE_KEY = "cloopd"
"""Where the TPMR counters live in the loop's method state."""


@dataclass(frozen=True)
class CloopdState:
    """Run-level counters TPMR reads (kept under every allocation, for the metrics)."""

    tokens_used: int = 0
    """Student tokens spent on passes so far."""
    third_passes: int = 0
    batches: int = 0

    def as_meta(self) -> dict:
        return {"tokens_used": self.tokens_used, "third_passes": self.third_passes, "batches": self.batches}

    @classmethod
    def from_meta(cls, meta: dict | None) -> "CloopdState":
        return cls(**(meta or {}))


@dataclass(frozen=True)
class PassResult:
    loss: float
    progress: float
    kl: float  # approx KL(old || after) on the frozen tokens, k3 estimator
    grad_norm: float


def kernel_config(cfg: CLOOPDMethodConfig) -> CLOOPDConfig:
    return CLOOPDConfig(kl_bound=cfg.kl_bound, tail_bound=cfg.tail_bound, clip=cfg.clip)


def run_pass(student: nn.Module, optimizer: torch.optim.Optimizer, logprobs: Callable[[], Tensor],
             frozen: FrozenBatch, cfg: CLOOPDMethodConfig) -> PassResult:
    """One clipped pass on the frozen signal and its realised progress (a re-forward).
    `logprobs()` is the current student's (B, N) log-probs of the frozen tokens, with grad."""
    current = logprobs()
    out = cloopd_pass_loss(pass_inputs(current, frozen), kernel_config(cfg))
    optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(student.parameters(), 1.0)
    optimizer.step()
    with torch.no_grad():
        after = logprobs()
        log_ratio = after - frozen.old_logprobs
        kl = token_mean(torch.expm1(log_ratio) - log_ratio, frozen.mask)  # k3: >= 0 per token
    progress = pass_progress(current.detach(), after, frozen, kernel_config(cfg))
    return PassResult(float(out.loss.detach()), float(progress), float(kl), float(grad_norm))


def third_pass(cfg: CLOOPDMethodConfig, state: CloopdState, second: PassResult, n_tokens: int, seed: int,
               step: int) -> bool:
    """TPMR's rule on pass 2, or the random control's draw (seeded by run seed and step)."""
    if cfg.allocation == "random":
        return random.Random(seed_for(seed, "cloopd-third", step)).random() < cfg.random_third
    inputs = TPMRInputs(
        progress=torch.tensor(second.progress), student_tokens=torch.tensor(n_tokens), pass_kl=torch.tensor(second.kl),
        tokens_used=torch.tensor(state.tokens_used + 2 * n_tokens), third_passes=torch.tensor(state.third_passes),
        batches=torch.tensor(state.batches + 1),
    )
    rule = TPMRConfig(min_rate=cfg.tpmr_min_rate, token_budget=cfg.token_budget, quota=cfg.tpmr_quota,
                      max_pass_kl=cfg.tpmr_max_pass_kl)
    decision, _ = tpmr_third_pass(inputs, rule)
    return bool(decision)


def cloopd_passes(student: nn.Module, optimizer: torch.optim.Optimizer, logprobs: Callable[[], Tensor],
                  teacher_lp: Tensor, mask: Tensor, cfg: CLOOPDMethodConfig, state: CloopdState, seed: int,
                  step: int) -> tuple[list[PassResult], FrozenBatch, bool, CloopdState]:
    """Freeze the scored batch, then 1-3 passes -> (passes, the frozen batch, whether a
    third pass was allocated, the next run state)."""
    with torch.no_grad():
        old = logprobs()
    frozen = freeze_batch(old, teacher_lp, mask, kernel_config(cfg))
    n_tokens = int(mask.sum())
    fixed = cfg.allocation == "fixed"
    passes = [run_pass(student, optimizer, logprobs, frozen, cfg) for _ in range(cfg.passes if fixed else 2)]
    extra = not fixed and third_pass(cfg, state, passes[-1], n_tokens, seed, step)
    if extra:
        passes.append(run_pass(student, optimizer, logprobs, frozen, cfg))
    after = replace(state, tokens_used=state.tokens_used + n_tokens * len(passes),
                    third_passes=state.third_passes + int(extra), batches=state.batches + 1)
    return passes, frozen, extra, after


def cloopd_step(ctx: StepContext, step: int) -> StepResult:
    """One CLOOPD step of the opd loop (method "cloopd", parameters `ctx.cfg.cloopd`; module
    docstring); reads and replaces ctx.state["cloopd"]. Deterministic in (weights, state,
    seed, step) on CPU."""
    cfg = ctx.cfg.cloopd
    start, r = time.perf_counter(), rollout(ctx, step)
    teacher_lp, seen = teacher_logprobs(ctx, r, centre_hints(ctx.cfg, r))  # the step's only teacher call
    mask = loss_mask(ctx.cfg, r)
    state = CloopdState.from_meta(ctx.state.get(STATE_KEY))
    passes, frozen, extra, state = cloopd_passes(ctx.student, ctx.optimizer, lambda: student_logprobs(ctx, r),
                                                 teacher_lp, mask, cfg, state, ctx.seed, step)
    ctx.state[STATE_KEY] = state.as_meta()
    n_tokens = int(mask.sum())
    metrics = {f"progress_{i + 1}": p.progress for i, p in enumerate(passes)}
    metrics.update(
        passes=float(len(passes)), third_pass=float(extra), teacher_tokens=float(seen),
        actor_tokens=float(n_tokens * len(passes)), alpha=float(frozen.alpha), kl_proxy=float(frozen.kl_proxy),
        pass_kl=passes[-1].kl, grad_norm=passes[-1].grad_norm, accuracy=float(r.outcomes.mean()),
        length_mean=float(r.mask.sum(-1).float().mean()), loss_token_frac=n_tokens / max(1, int(r.mask.sum())),
        reverse_kl=float(token_mean(frozen.old_logprobs - teacher_lp, mask)),
    )
    return StepResult(passes[0].loss, metrics, int(r.mask.sum()), len(r.texts), time.perf_counter() - start)
