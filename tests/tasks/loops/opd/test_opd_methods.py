"""The opd loop's step functions on tiny random TinyLMs (CPU): every method takes a finite,
parameter-changing step; DIAL keeps exactly ceil(rho * n) tokens per response; Cal-OPD
with a zero-width interval is plain OPD; the contrast rows and the Two-End step ids and
mask match hand-worked cases."""

import math
from dataclasses import replace

import pytest
import torch

from kernels.configs import OPDConfig, TinyLMConfig
from kernels.distill import opd_loss
from kernels.model import TinyLM
from kernels.types import DistillInputs
from schemas.post_training import DistillRunConfig
from suites.arith import Arith
from suites.arith.prompts import prompt_source
from suites.arith.tasks import solve_add
from suites.arith.teacher import VOCAB_SIZE
from suites.arith.tokenizer import EOS, Tokenizer
from tasks.loops.opd.opd_methods import METHODS, contrast_rows, probe_hints
from tasks.loops.opd.opd_rollouts import (
    Rollouts,
    StepContext,
    loss_mask,
    rollout,
    student_logprobs,
    teacher_logprobs,
    trace_step_ids,
)
from tasks.training.policy import make_optimizer

SUITE = Arith(categories=("add",), n_per_category=40)


def tiny(seed: int, width: int = 16) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(TinyLMConfig(vocab_size=VOCAB_SIZE, d_model=width, n_layers=1, n_heads=2, max_len=128))


def context(method: str, **overrides) -> StepContext:
    torch.set_num_threads(1)
    cfg = DistillRunConfig(method=method, prompts_per_step=2, rollouts=3, max_new_tokens=10, **overrides)
    student, teacher = tiny(0), tiny(1, width=32).eval().requires_grad_(False)
    pool = prompt_source("pool", SUITE.problems("train"))
    return StepContext(student, teacher, make_optimizer(student, 1e-2), pool, cfg, seed=3, suite=SUITE)


# stride plays multi-turn chain episodes, one per problem: tests/tasks/test_opd_stride.py
@pytest.mark.parametrize("method", sorted(set(METHODS) - {"stride"}))
def test_every_method_takes_a_finite_step_that_moves_the_student(method):
    ctx = context(method)
    before = [p.detach().clone() for p in ctx.student.parameters()]
    result = METHODS[method](ctx, 0)
    assert math.isfinite(result.loss) and result.samples == 6 and result.tokens > 0
    assert {"accuracy", "length_mean", "loss_token_frac", "teacher_tokens", "reverse_kl"} <= set(result.metrics)
    assert all(math.isfinite(v) for v in result.metrics.values())
    # random students answer wrong, so the contrastive methods use every row of each group
    assert any(not torch.equal(a, b) for a, b in zip(before, ctx.student.parameters()))


def test_student_reread_matches_the_samplers_logprobs():
    ctx = context("opd")
    r = rollout(ctx, 0)
    with torch.no_grad():
        reread = student_logprobs(ctx, r)
    torch.testing.assert_close(torch.where(r.mask, reread, torch.zeros_like(reread)), r.sampled_logprobs,
                               rtol=1e-5, atol=1e-5)
    assert r.mask.any()


def test_dial_keeps_ceil_rho_tokens_of_each_response():
    ctx = context("dial", dial_keep_ratio=0.4)
    lengths = rollout(ctx, 0).mask.sum(-1).tolist()  # the step redraws exactly these rollouts
    result = METHODS["dial"](ctx, 0)
    expected = sum(math.ceil(0.4 * n) for n in lengths) / sum(lengths)
    assert result.metrics["selected_frac"] == pytest.approx(expected)
    assert result.metrics["length_mean"] == pytest.approx(sum(lengths) / len(lengths))


def test_cal_opd_with_a_zero_width_interval_is_plain_opd():
    cal, plain = context("cal_opd", cal_amplification=0.0), context("opd")
    a, b = METHODS["cal_opd"](cal, 0), METHODS["opd"](plain, 0)
    assert a.loss == pytest.approx(b.loss, abs=1e-6)
    assert a.metrics["reverse_kl"] == pytest.approx(b.metrics["reverse_kl"], abs=1e-6)
    assert a.metrics["kept_signal_frac"] == pytest.approx(1.0, abs=1e-5)
    assert a.metrics["teacher_tokens"] > b.metrics["teacher_tokens"]  # the two probes cost teacher reads


def hand_rollouts(texts: list[str], outcomes: list[float], groups: int) -> Rollouts:
    tok = Tokenizer()
    rows = [tok.encode_completion(t) for t in texts]
    width = max(map(len, rows))
    tokens = torch.tensor([r + [EOS] * (width - len(r)) for r in rows])
    mask = torch.tensor([[i < len(r) for i in range(width)] for r in rows])
    problems = [solve_add(12, 34)] * len(texts)
    return Rollouts([p.prompt for p in problems], problems, tokens, mask, torch.zeros(tokens.shape), texts,
                    torch.tensor(outcomes), groups, len(texts) // groups)


def test_contrast_rows_pair_each_wrong_response_with_the_next_wrong_one_of_its_group():
    r = hand_rollouts(["1"] * 8, [0, 1, 0, 0, 1, 1, 0, 1], groups=2)
    used, negative = contrast_rows(r)
    assert used.tolist() == [True, False, True, True, False, False, False, False]
    assert [negative[b] for b in (0, 2, 3)] == [2, 3, 0]
    unparsed = replace(r, problems=[None] + r.problems[1:])  # an unfiltered teacher-written prompt
    used, negative = contrast_rows(unparsed)
    assert used.tolist() == [False, False, True, True, False, False, False, False] and negative[2:4] == [3, 2]


def test_probes_claim_own_answer_and_the_next_groups_answer():
    r = hand_rollouts(["1+2=3#46", "9#45", "x#7", "#8"], [1, 0, 0, 0], groups=2)
    positive, negative = probe_hints(r, "answer")
    assert positive == ["46", "45", "7", "8"] and negative == ["7", "8", "46", "45"]


def test_two_end_masks_the_middle_step_and_keeps_the_answer():
    r = hand_rollouts(["ab;cd;ef#x"], [0.0], groups=1)
    # a b ; | c d ; | e f | # x eos: step centres 1.5/8, 4.5/8, 7/8 of the 8 trace tokens
    assert trace_step_ids(r.tokens, r.mask).tolist() == [[0, 0, 0, 1, 1, 1, 2, 2, -1, -1, -1]]
    cfg = DistillRunConfig(two_end=True, two_end_middle_frac=0.2)
    assert loss_mask(cfg, r).tolist() == [[True] * 3 + [False] * 3 + [True] * 5]
    assert loss_mask(DistillRunConfig(), r).tolist() == [[True] * 11]


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(method="gvpo", rollouts=1), "rollouts >= 2"),
        (dict(method="attract_repel", teacher_context="answer"), "teacher_context"),
        (dict(method="attract_repel", repel_weight=0.0), "attract_only"),
        (dict(method="gvpo", two_end=True), "two_end=false"),
        (dict(method="attract_only", max_new_tokens=60), "max_new_tokens <= 48"),
        (dict(categories=()), "non-empty"),
    ],
)
def test_bad_configs_name_the_field_and_the_fix(overrides, message):
    with pytest.raises(ValueError, match=message):
        DistillRunConfig(**overrides)


def test_a_teacher_identical_to_the_student_teaches_nothing():
    """Alignment check of the teacher re-read: with the student's own weights as the
    teacher (plain prompts), every sampled token's reverse KL is 0 and the OPD loss
    has no gradient, so a nonzero signal in real runs comes from the teacher, not from an
    off-by-one between the two re-reads."""
    ctx = context("opd")
    ctx = replace(ctx, teacher=tiny(0).eval().requires_grad_(False))
    r = rollout(ctx, 0)
    lp_t, _ = teacher_logprobs(ctx, r, [None] * len(r.prompts))
    lp_s = student_logprobs(ctx, r)
    torch.testing.assert_close(torch.where(r.mask, lp_t, torch.zeros_like(lp_t)), r.sampled_logprobs,
                               rtol=1e-5, atol=1e-5)
    out = opd_loss(DistillInputs(lp_s, lp_t, r.mask), OPDConfig())
    out.loss.backward()
    assert all(p.grad is None or float(p.grad.abs().max()) < 1e-6 for p in ctx.student.parameters())
