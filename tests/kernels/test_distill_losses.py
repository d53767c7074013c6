import math

import pytest
import torch
from torch.testing import assert_close

from kernels.configs import AttractRepelConfig, CalOPDConfig, DIALConfig, OPDConfig
from kernels.distill import (
    attract_repel_loss,
    cal_interval,
    cal_opd_loss,
    dial_opd_loss,
    dial_select,
    gjsd_signal,
    log_mean_log,
    opd_loss,
)
from kernels.types import CalOPDInputs, ContrastInputs, DistillInputs

F64 = dict(dtype=torch.float64)
ln = math.log


def t(x, grad=False):
    return torch.tensor(x, **F64, requires_grad=grad)


def test_opd_surrogate_value_gradient_and_kl_metric():
    inp = DistillInputs(t([[-1.0, -2.0]], True), t([[-0.5, -3.0]]), torch.ones(1, 2, dtype=torch.bool))
    out = opd_loss(inp, OPDConfig())
    # signal log p_T - log p_S = [0.5, -1]; loss = mean(-signal * log p_S)
    assert_close(out.loss, t(-0.75))
    assert_close(out.metrics["reverse_kl"], t(0.25))
    out.loss.backward()
    assert_close(inp.student_logprobs.grad, t([[-0.25, 0.5]]))  # descent raises token 0, lowers token 1


def test_opd_empty_mask_is_zero():
    inp = DistillInputs(t([[-1.0]], True), t([[-5.0]]), torch.zeros(1, 1, dtype=torch.bool))
    out = opd_loss(inp, OPDConfig())
    out.loss.backward()
    assert out.loss.item() == 0.0 and inp.student_logprobs.grad.item() == 0.0


def test_log_mean():
    assert_close(log_mean_log(t(ln(0.5)), t(ln(0.25))), t(ln(0.25 / ln(2))))
    assert_close(log_mean_log(t(ln(0.25)), t(ln(0.5))), t(ln(0.25 / ln(2))))
    assert_close(log_mean_log(t(ln(0.3)), t(ln(0.3))), t(ln(0.3)))
    assert_close(log_mean_log(t(-800.0), t(-801.0)), t(-800.0 + ln(1 - math.exp(-1))))  # no underflow


# one response, five tokens; student log p = -1 everywhere
LP_S = [[-1.0] * 5]
LP_T = [[-1.5, -3.0, -1.0, -0.2, -5.0]]  # |diff| = 0.5, 2, 0, 0.8, 4; token 4 is low-low


@pytest.mark.parametrize("beta, chosen", [(0.0, [1, 4]), (1.0, [3, 4]), (2.0, [1, 3])])
def test_dial_selection_moves_off_low_low_tokens_as_beta_grows(beta, chosen):
    inp = DistillInputs(t(LP_S), t(LP_T), torch.ones(1, 5, dtype=torch.bool))
    selected, score = dial_select(inp, DIALConfig(keep_ratio=0.4, beta=beta))
    assert torch.nonzero(selected[0]).flatten().tolist() == chosen
    L = (math.exp(-1) - math.exp(-5)) / 4  # log-mean of p_T = e^-5, p_S = e^-1
    assert_close(score[0, 4], t(4 * L**beta))


def test_dial_keeps_ceil_of_rho_per_row_and_nothing_from_empty_rows():
    mask = torch.tensor([[True, True, True, False, False], [False] * 5])
    inp = DistillInputs(t(LP_S * 2), t(LP_T * 2), mask)
    selected, _ = dial_select(inp, DIALConfig(keep_ratio=0.4, beta=0.0))
    assert selected.tolist() == [[True, True, False, False, False], [False] * 5]  # ceil(1.2) = 2


def test_dial_loss_is_opd_on_selected_tokens_only():
    inp = DistillInputs(t(LP_S, True), t(LP_T), torch.ones(1, 5, dtype=torch.bool))
    out = dial_opd_loss(inp, DIALConfig(keep_ratio=0.4, beta=0.0))
    # tokens 1 and 4: signals -2, -4; loss = mean(-signal * -1)
    assert_close(out.loss, t(-3.0))
    assert_close(out.metrics["selected_frac"], t(0.4))
    out.loss.backward()
    assert_close(inp.student_logprobs.grad, t([[0.0, 1.0, 0.0, 0.0, 2.0]]))


def test_dial_with_full_ratio_equals_opd():
    inp = DistillInputs(t(LP_S), t(LP_T), torch.ones(1, 5, dtype=torch.bool))
    assert_close(dial_opd_loss(inp, DIALConfig(keep_ratio=1.0)).loss, opd_loss(inp, OPDConfig()).loss)


def cal_inputs(student, grad=False):
    return CalOPDInputs(
        student_logprobs=t([student], grad),
        teacher_logprobs=t([[-1.0, -1.0, -1.0]]),
        teacher_pos_logprobs=t([[-0.8, -1.2, -1.0]]),
        teacher_neg_logprobs=t([[-1.3, -0.9, -1.0]]),
        mask=torch.ones(1, 3, dtype=torch.bool),
    )


def test_cal_interval_uses_the_largest_shift_each_way():
    lo, hi = cal_interval(cal_inputs([-1.0] * 3), CalOPDConfig(amplification=1.0))
    assert_close(lo, t([[-1.3, -1.2, -1.0]]))
    assert_close(hi, t([[-0.8, -0.9, -1.0]]))
    lo2, hi2 = cal_interval(cal_inputs([-1.0] * 3), CalOPDConfig(amplification=2.0))
    assert_close(lo2, t([[-1.6, -1.4, -1.0]]))
    assert_close(hi2, t([[-0.6, -0.8, -1.0]]))


def test_cal_opd_learns_only_the_residual_outside_the_interval():
    inp = cal_inputs([-1.1, -2.0, -0.5], grad=True)
    out = cal_opd_loss(inp, CalOPDConfig(amplification=1.0))
    # inside -> 0; below lo=-1.2 -> +0.8; above hi=-1.0 -> -0.5
    assert_close(out.loss, t((0.0 + 0.8 * 2.0 - 0.5 * 0.5) / 3))
    assert_close(out.metrics["kept_signal_frac"], t(1.3 / 1.6))
    out.loss.backward()
    assert_close(inp.student_logprobs.grad, t([[0.0, -0.8 / 3, 0.5 / 3]]))


def test_cal_opd_with_zero_amplification_is_opd():
    inp = cal_inputs([-1.1, -2.0, -0.5])
    plain = opd_loss(DistillInputs(inp.student_logprobs, inp.teacher_logprobs, inp.mask), OPDConfig())
    assert_close(cal_opd_loss(inp, CalOPDConfig(amplification=0.0)).loss, plain.loss)


def test_gjsd_signal_value():
    assert_close(gjsd_signal(t(ln(0.5)), t(ln(0.1)), 0.5), t(0.5 * ln(0.3 / 0.5)))


@pytest.mark.parametrize("beta", [0.2, 0.5, 0.9])
def test_gjsd_signal_gives_the_exact_jsd_gradient_in_expectation(beta):
    logits = t([0.3, -1.0, 2.0, 0.1], True)
    teacher = torch.log_softmax(t([1.0, 0.5, -2.0, 0.0]), 0)
    log_s = torch.log_softmax(logits, 0)
    s, p_t = log_s.exp(), teacher.exp()
    m = beta * s + (1 - beta) * p_t
    jsd = beta * (s * (log_s - m.log())).sum() + (1 - beta) * (p_t * (teacher - m.log())).sum()
    (exact,) = torch.autograd.grad(jsd, logits, retain_graph=True)
    # E_{y~S}[-signal(y) * grad log S(y)], summed over the whole vocabulary
    surrogate = (s.detach() * -gjsd_signal(log_s, teacher, beta) * log_s).sum()
    (estimated,) = torch.autograd.grad(surrogate, logits)
    assert_close(estimated, exact)


def contrast(student, pos, neg, grad=False):
    return ContrastInputs(t([student], grad), t([pos]), t([neg]), torch.ones(1, len(student), dtype=torch.bool))


def test_attract_repel_value_and_direction():
    inp = contrast([ln(0.5)], [ln(0.9)], [ln(0.1)], grad=True)
    out = attract_repel_loss(inp, AttractRepelConfig())
    signal = 0.5 * 0.5 * ln(0.7 / 0.5) - 0.5 * 0.5 * ln(0.3 / 0.5)
    assert_close(out.loss, t(-signal * ln(0.5)))
    assert_close(out.metrics["teacher_margin"], t(ln(9.0)))
    out.loss.backward()
    assert inp.student_logprobs.grad.item() < 0  # descent raises the token the correct context prefers


def test_a_shift_shared_by_both_teachers_cancels():
    inp = contrast([ln(0.5), ln(0.2)], [ln(0.05), ln(0.9)], [ln(0.05), ln(0.9)], grad=True)
    out = attract_repel_loss(inp, AttractRepelConfig())
    out.loss.backward()
    assert_close(inp.student_logprobs.grad, t([[0.0, 0.0]]))


def test_attract_only_and_repel_only_arms():
    inp = contrast([ln(0.5)], [ln(0.9)], [ln(0.1)])
    attract = attract_repel_loss(inp, AttractRepelConfig(attract_weight=1.0, repel_weight=0.0))
    repel = attract_repel_loss(inp, AttractRepelConfig(attract_weight=0.0, repel_weight=1.0))
    assert_close(attract.loss, t(-0.5 * ln(0.7 / 0.5) * ln(0.5)))
    assert_close(repel.loss, t(0.5 * ln(0.3 / 0.5) * ln(0.5)))
