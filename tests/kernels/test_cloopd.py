import dataclasses
import math

import pytest
import torch
from torch.testing import assert_close

from kernels.cloopd import cloopd_pass_loss, freeze_batch, mixture_logprob, pass_inputs, pass_progress, tpmr_third_pass
from kernels.configs import CLOOPDConfig, TPMRConfig
from kernels.types import TPMRInputs

F64 = dict(dtype=torch.float64)
ln = math.log


def t(x, grad=False):
    return torch.tensor(x, **F64, requires_grad=grad)


def test_mixture_is_arithmetic_in_probability():
    lp_s, lp_t = t(ln(0.2)), t(ln(0.6))
    assert_close(mixture_logprob(lp_s, lp_t, t(0.5)), t(ln(0.4)))
    assert_close(mixture_logprob(lp_s, lp_t, t(0.0)), lp_s)
    assert_close(mixture_logprob(lp_s, lp_t, t(1.0)), lp_t)


def test_alpha_is_the_largest_grid_value_within_the_kl_bound():
    # one token, p_S = 0.5, p_T = 0.05: reward ln(1 - 0.9 alpha), KL proxy = -reward <= ln 2 -> alpha <= 5/9
    mask = torch.tensor([[True, False]])
    frozen = freeze_batch(t([[ln(0.5), -0.1]]), t([[ln(0.05), -20.0]]), mask, CLOOPDConfig(kl_bound=ln(2), tail_bound=10.0, alpha_grid=11))
    assert_close(frozen.alpha, t(0.5))
    assert_close(frozen.kl_proxy, t(-ln(0.55)))
    assert_close(frozen.target_logprobs[0, 0], t(ln(0.275)))
    assert_close(frozen.advantages, t([[ln(0.55), 0.0]]))


def test_alpha_respects_the_negative_reward_tail():
    # token A gains (p_T = 0.9), token B loses: its reward ln(1 - 0.9 alpha) must stay >= -ln 2
    mask = torch.ones(1, 2, dtype=torch.bool)
    cfg = CLOOPDConfig(kl_bound=10.0, tail_quantile=0.05, tail_bound=ln(2), alpha_grid=11)
    frozen = freeze_batch(t([[ln(0.5), ln(0.5)]]), t([[ln(0.9), ln(0.05)]]), mask, cfg)
    assert_close(frozen.alpha, t(0.5))
    assert_close(frozen.advantages, t([[ln(1.4), ln(0.55)]]))


def test_teacher_agreeing_with_the_student_gives_alpha_one():
    frozen = freeze_batch(t([[ln(0.5), ln(0.3)]]), t([[ln(0.5), ln(0.3)]]), torch.ones(1, 2, dtype=torch.bool), CLOOPDConfig())
    assert_close(frozen.alpha, t(1.0))
    assert_close(frozen.advantages, t([[0.0, 0.0]]))


def test_empty_batch_freezes_without_nan():
    frozen = freeze_batch(t([[-1.0]]), t([[-9.0]]), torch.zeros(1, 1, dtype=torch.bool), CLOOPDConfig())
    assert not torch.isnan(frozen.kl_proxy) and frozen.advantages.abs().sum() == 0


def test_first_pass_is_the_plain_frozen_advantage_gradient():
    mask = torch.ones(1, 2, dtype=torch.bool)
    frozen = freeze_batch(t([[ln(0.5), ln(0.5)]]), t([[ln(0.9), ln(0.05)]]), mask, CLOOPDConfig(kl_bound=10.0, tail_bound=ln(2), alpha_grid=11))
    logprobs = frozen.old_logprobs.clone().requires_grad_()
    out = cloopd_pass_loss(pass_inputs(logprobs, frozen), CLOOPDConfig())
    assert_close(out.loss, t(-(ln(1.4) + ln(0.55)) / 2))
    out.loss.backward()
    assert_close(logprobs.grad, t([[-ln(1.4) / 2, -ln(0.55) / 2]]))


def test_pass_progress_is_the_clipped_surrogate_gain():
    frozen = freeze_batch(t([[0.0, 0.0]]), t([[0.0, 0.0]]), torch.ones(1, 2, dtype=torch.bool), CLOOPDConfig())
    frozen = dataclasses.replace(frozen, advantages=t([[1.0, -1.0]]))
    before = frozen.old_logprobs
    cfg = CLOOPDConfig(clip=0.2)
    # ratios 1.5 (A = 1) and 0.5 (A = -1) are credited only up to the clip: (1.2 - 0.8) / 2
    assert_close(pass_progress(before, t([[ln(1.5), ln(0.5)]]), frozen, cfg), t(0.2))
    # moving the wrong way is counted in full: (1.1 - 1.5) / 2
    assert_close(pass_progress(before, t([[ln(1.1), ln(1.5)]]), frozen, cfg), t(-0.2))


def tpmr_inputs(**kw):
    base = dict(progress=t(5.0), student_tokens=t(100.0), pass_kl=t(0.01), tokens_used=t(1000.0), third_passes=t(1.0), batches=t(4.0))
    base.update({k: t(v) for k, v in kw.items()})
    return TPMRInputs(**base)


@pytest.mark.parametrize(
    "change, expected",
    [
        ({}, True),
        ({"progress": -1.0}, False),  # rate check
        ({"tokens_used": 9_950.0}, False),  # budget: 9950 + 100 > 10000
        ({"third_passes": 2.0}, False),  # quota: 3 > 0.5 * 4
        ({"pass_kl": 0.2}, False),  # stability
    ],
)
def test_tpmr_needs_every_check(change, expected):
    decision, checks = tpmr_third_pass(tpmr_inputs(**change), TPMRConfig(min_rate=0.01, token_budget=10_000, quota=0.5, max_pass_kl=0.05))
    assert bool(decision) is expected
    assert_close(checks["rate"], t(change.get("progress", 5.0) / 100))
