import torch
from torch.testing import assert_close

from kernels.configs import GVPOConfig, GVPODistillConfig
from kernels.gvpo import gvpo_distill_loss, gvpo_loss
from kernels.types import GVPODistillInputs, GVPOInputs

F64 = dict(dtype=torch.float64)


def gvpo_inputs(logprobs, ref, rewards):
    return GVPOInputs(torch.tensor(logprobs, **F64, requires_grad=True), torch.tensor(ref, **F64), torch.tensor(rewards, **F64))


def test_gvpo_is_zero_when_the_centred_implicit_reward_matches():
    inp = gvpo_inputs([[-1.0, -2.0]], [[-1.5, -1.5]], [[1.0, 0.0]])
    assert_close(gvpo_loss(inp, GVPOConfig(beta=1.0)).loss, torch.tensor(0.0, **F64))


def test_gvpo_value_and_weighted_likelihood_gradient():
    inp = gvpo_inputs([[-1.0, -2.0]], [[-1.5, -1.5]], [[1.0, 0.0]])
    out = gvpo_loss(inp, GVPOConfig(beta=0.1))
    # implicit 0.1 * [0.5, -0.5] centred [0.05, -0.05]; rewards centred [0.5, -0.5]; residual [-0.45, 0.45]
    assert_close(out.loss, torch.tensor(0.5 * 0.45**2, **F64))
    out.loss.backward()
    # grad_i = beta * residual_i / (G n): raise the under-rewarded response's likelihood
    assert_close(inp.logprobs.grad, torch.tensor([[-0.0225, 0.0225]], **F64))


def test_gvpo_ignores_per_group_constants():
    a = gvpo_loss(gvpo_inputs([[-1.0, -2.0, -4.0], [-3.0, -1.0, -2.0]], [[0.0] * 3] * 2, [[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]]), GVPOConfig())
    b = gvpo_loss(gvpo_inputs([[-6.0, -7.0, -9.0], [-3.0, -1.0, -2.0]], [[0.0] * 3] * 2, [[11.0, 10.0, 10.5], [-5.0, -4.0, -4.0]]), GVPOConfig())
    assert_close(a.loss, b.loss)


def test_gvpo_gradcheck():
    ref, rewards = torch.tensor([[-1.0, -2.0, -0.5]], **F64), torch.tensor([[0.3, 1.0, 0.0]], **F64)
    f = lambda lp: gvpo_loss(GVPOInputs(lp, ref, rewards), GVPOConfig(beta=0.5)).loss
    assert torch.autograd.gradcheck(f, (torch.tensor([[-2.0, -1.0, -3.0]], **F64, requires_grad=True),))


def distill_inputs(student, teacher, lengths):
    return GVPODistillInputs(torch.tensor(student, **F64, requires_grad=True), torch.tensor(teacher, **F64), torch.tensor(lengths, **F64))


def test_gvpo_distill_whole_sequence_form():
    out = gvpo_distill_loss(distill_inputs([[-3.0, -5.0]], [[-2.0, -6.0]], [[2.0, 4.0]]), GVPODistillConfig(length_power=0.0))
    # centred student [1, -1], centred teacher [2, -2], residual [-1, 1]
    assert_close(out.loss, torch.tensor(0.5, **F64))


def test_gvpo_distill_length_weight():
    inp = distill_inputs([[-3.0, -5.0]], [[-2.0, -6.0]], [[2.0, 4.0]])
    out = gvpo_distill_loss(inp, GVPODistillConfig(length_power=1.0))
    # per-token student [-1.5, -1.25] -> [-0.125, 0.125]; teacher [-1, -1.5] -> [0.25, -0.25]
    assert_close(out.loss, torch.tensor(0.5 * 0.375**2, **F64))
    out.loss.backward()
    # d/ds_i = w_i * residual_i / n (centring drops out because residuals sum to 0 per group)
    assert_close(inp.student_logprobs.grad, torch.tensor([[-0.375 / 2 / 2, 0.375 / 4 / 2]], **F64))


def test_gvpo_distill_is_zero_at_a_shifted_teacher():
    # any per-group offset (the two vocabularies' partition) costs nothing
    out = gvpo_distill_loss(distill_inputs([[-7.0, -9.0, -8.0]], [[-2.0, -4.0, -3.0]], [[1.0, 1.0, 1.0]]), GVPODistillConfig(length_power=0.0))
    assert_close(out.loss, torch.tensor(0.0, **F64))


def test_gvpo_distill_gradcheck():
    teacher, lengths = torch.tensor([[-2.0, -6.0, -3.0]], **F64), torch.tensor([[2.0, 5.0, 3.0]], **F64)
    f = lambda s: gvpo_distill_loss(GVPODistillInputs(s, teacher, lengths), GVPODistillConfig(length_power=0.5)).loss
    assert torch.autograd.gradcheck(f, (torch.tensor([[-1.0, -4.0, -2.5]], **F64, requires_grad=True),))
