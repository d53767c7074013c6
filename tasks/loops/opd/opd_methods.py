"""The `opd` loop's methods: one pure function per method, `(StepContext, step) ->
StepResult`, each one optimizer step (draw prompts, sample the student, score its tokens
under the teacher, apply the method's loss, AdamW). `METHODS` is the only dispatch.

Departures from the papers (all on tiny arith LMs, see the flow docstring of `flows/opd.py`):

- opd / dial / cal_opd / gvpo read the teacher with the configured privileged context
  (Self-Teacher Context); its reverse KL is sampled-token, not full-vocabulary.
- Cal-OPD: the teacher was never trained with verdict tokens, so the two opposing
  probes are claims in the hint channel it was trained to read: the positive probe
  gives the student's own answer (cal_probe="answer", the L5 format) or whole response
  ("solution", L1) as the reference, i.e. "already judged correct"; the negative probe
  gives the same rollout slot of the next prompt group (another problem's response,
  hence "judged wrong"; with one group, the next rollout).
- Attract/Repel: positive context = the problem's worked solution (L1 format), negative =
  the next other wrong response of the same group in the same L1 template; only wrong
  responses with another wrong one in their group carry loss, as in the paper.
  attract_only keeps those rows and sets the repel weight to 0.
- gvpo: GVPO++'s OPD form over whole-response log-probs (same tokenizer here).
- DF-OPD's teacher-written prompts are unfiltered: a row whose prompt does not parse is
  still distilled on, counts as wrong in `accuracy`, gets no privileged context and no
  contrastive loss (`graded_frac` is the share of rows with a parsed problem).
- Two-End (`two_end`) masks the middle worked steps of the loss of any token-level method.
- stride / cloopd live in `tasks.loops.opd.opd_stride` / `tasks.loops.opd.opd_cloopd` (their own docstrings);
  each keeps its run state (prefix buffer, TPMR counters) in `StepContext.state`."""

from __future__ import annotations

import time
from typing import Callable

import torch

from kernels.configs import AttractRepelConfig, CalOPDConfig, DIALConfig, GVPODistillConfig, OPDConfig
from kernels.distill import attract_repel_loss, cal_interval, cal_opd_loss, dial_opd_loss, opd_loss
from kernels.gvpo import gvpo_distill_loss
from kernels.reduce import token_mean
from kernels.types import CalOPDInputs, ContrastInputs, DistillInputs, GVPODistillInputs
from suites.arith.verify import extract_answer
from tasks.loops.opd.opd_cloopd import cloopd_step
from tasks.loops.opd.opd_rollouts import (
    Rollouts,
    StepContext,
    centre_hints,
    finish,
    inside_frac,
    loss_mask,
    rollout,
    student_logprobs,
    teacher_logprobs,
)
from tasks.loops.opd.opd_stride import loop_step as stride_step
from tasks.training.policy import StepResult

StepFn = Callable[[StepContext, int], StepResult]


def opd_step(ctx: StepContext, step: int) -> StepResult:
    """Full-token sampled-token reverse-KL OPD."""
    start, r = time.perf_counter(), rollout(ctx, step)
    lp_t, seen = teacher_logprobs(ctx, r, centre_hints(ctx.cfg, r))
    mask = loss_mask(ctx.cfg, r)
    out = opd_loss(DistillInputs(student_logprobs(ctx, r), lp_t, mask), OPDConfig())
    return finish(ctx, r, out, mask, seen, start)


def dial_step(ctx: StepContext, step: int) -> StepResult:
    """DIAL-OPD: OPD on each response's top keep-ratio tokens by disagreement x log-mean weight."""
    start, r = time.perf_counter(), rollout(ctx, step)
    lp_t, seen = teacher_logprobs(ctx, r, centre_hints(ctx.cfg, r))
    mask = loss_mask(ctx.cfg, r)
    cfg = DIALConfig(keep_ratio=ctx.cfg.dial_keep_ratio, beta=ctx.cfg.dial_beta)
    out = dial_opd_loss(DistillInputs(student_logprobs(ctx, r), lp_t, mask), cfg)
    return finish(ctx, r, out, mask, seen, start)


def other_row(r: Rollouts, b: int) -> int:
    """The row whose response the negative probe of row b claims: same slot, next group."""
    B = len(r.texts)
    return (b + r.n) % B if r.groups > 1 else (b + 1) % B


def probe_hints(r: Rollouts, level: str) -> tuple[list[str], list[str]]:
    """(positive, negative) Cal-OPD probe hints per row (see the module docstring)."""
    claim = [extract_answer(t) if level == "answer" else t for t in r.texts]
    return claim, [claim[other_row(r, b)] for b in range(len(claim))]


def cal_opd_step(ctx: StepContext, step: int) -> StepResult:
    """Cal-OPD: learn only the residual outside the teacher's probe interval."""
    start, r = time.perf_counter(), rollout(ctx, step)
    lp_t, seen = teacher_logprobs(ctx, r, centre_hints(ctx.cfg, r))
    positive, negative = probe_hints(r, ctx.cfg.cal_probe)
    lp_pos, seen_pos = teacher_logprobs(ctx, r, positive)
    lp_neg, seen_neg = teacher_logprobs(ctx, r, negative)
    mask, lp_s = loss_mask(ctx.cfg, r), student_logprobs(ctx, r)
    inputs = CalOPDInputs(lp_s, lp_t, lp_pos, lp_neg, mask)
    cfg = CalOPDConfig(amplification=ctx.cfg.cal_amplification)
    out = cal_opd_loss(inputs, cfg)
    lo, hi = cal_interval(inputs, cfg)
    extra = {"cal_inside_frac": inside_frac(lp_s, lo, hi, mask)}
    return finish(ctx, r, out, mask, seen + seen_pos + seen_neg, start, extra)


def contrast_rows(r: Rollouts) -> tuple[torch.Tensor, list[int]]:
    """(used (B,) bool, negative row per row): a wrong response of a prompt with a known
    solution is used when its group has another wrong one, the next in the group
    (cyclically) being its negative."""
    used, negative = [False] * len(r.texts), list(range(len(r.texts)))
    wrong = [o == 0 and p is not None for o, p in zip(r.outcomes.tolist(), r.problems)]
    for g in range(r.groups):
        rows = [g * r.n + i for i in range(r.n) if wrong[g * r.n + i]]
        for k, b in enumerate(rows if len(rows) > 1 else []):
            used[b], negative[b] = True, rows[(k + 1) % len(rows)]
    return torch.tensor(used, device=r.mask.device), negative


def contrastive_step(ctx: StepContext, step: int, repel_weight: float) -> StepResult:
    """Attract toward the correct-solution teacher, repel (weight `repel_weight`) from the
    teacher given another wrong response, on the wrong responses of each group."""
    start, r = time.perf_counter(), rollout(ctx, step)
    used, negative = contrast_rows(r)
    lp_pos, seen_pos = teacher_logprobs(ctx, r, [p.target("worked") if p else "" for p in r.problems])
    lp_neg, seen_neg = teacher_logprobs(ctx, r, [r.texts[negative[b]] for b in range(len(r.texts))])
    mask, lp_s = loss_mask(ctx.cfg, r) & used[:, None], student_logprobs(ctx, r)
    cfg = AttractRepelConfig(jsd_beta=ctx.cfg.jsd_beta, attract_weight=ctx.cfg.attract_weight,
                             repel_weight=repel_weight)
    out = attract_repel_loss(ContrastInputs(lp_s, lp_pos, lp_neg, mask), cfg)
    extra = {"used_frac": used.float().mean(), "reverse_kl": token_mean(lp_s.detach() - lp_pos, mask)}
    return finish(ctx, r, out, mask, seen_pos + seen_neg, start, extra)


def attract_repel_step(ctx: StepContext, step: int) -> StepResult:
    return contrastive_step(ctx, step, ctx.cfg.repel_weight)


def attract_only_step(ctx: StepContext, step: int) -> StepResult:
    return contrastive_step(ctx, step, 0.0)


def gvpo_step(ctx: StepContext, step: int) -> StepResult:
    """GVPO++ OPD: group-centred MSE between length-weighted whole-response log-probs."""
    start, r = time.perf_counter(), rollout(ctx, step)
    lp_t, seen = teacher_logprobs(ctx, r, centre_hints(ctx.cfg, r))
    lp_s, mask = student_logprobs(ctx, r), r.mask
    zero = torch.zeros_like(lp_s)
    shape = (r.groups, r.n)
    inputs = GVPODistillInputs(
        torch.where(mask, lp_s, zero).sum(-1).view(shape), torch.where(mask, lp_t, zero).sum(-1).view(shape),
        mask.sum(-1).clamp(min=1).view(shape),
    )
    out = gvpo_distill_loss(inputs, GVPODistillConfig(length_power=ctx.cfg.gvpo_length_power))
    extra = {"reverse_kl": token_mean(lp_s.detach() - lp_t, mask)}
    return finish(ctx, r, out, mask, seen, start, extra)


METHODS: dict[str, StepFn] = {
    "opd": opd_step,
    "dial": dial_step,
    "cal_opd": cal_opd_step,
    "attract_repel": attract_repel_step,
    "attract_only": attract_only_step,
    "gvpo": gvpo_step,
    "stride": stride_step,
    "cloopd": cloopd_step,
}
"""Method name (`DistillRunConfig.method`) -> its step function."""
