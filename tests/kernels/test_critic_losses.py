import math

import torch
from torch.testing import assert_close

from kernels.configs import PACTConfig, ValueLossConfig
from kernels.critic import pact_critic_loss, ppo_value_loss
from kernels.types import PACTInputs, ValueInputs

F64 = dict(dtype=torch.float64)
LN2 = math.log(2)


def test_value_loss_takes_the_larger_of_clipped_and_unclipped_error():
    values = torch.tensor([[0.5, 1.0, 7.0]], **F64, requires_grad=True)
    inp = ValueInputs(
        values=values,
        old_values=torch.tensor([[0.2, 0.9, 0.0]], **F64),
        returns=torch.tensor([[1.0, 0.0, 0.0]], **F64),
        mask=torch.tensor([[True, True, False]]),
    )
    out = ppo_value_loss(inp, ValueLossConfig(clip=0.2))
    # token 0: V_clip = 0.4, max(0.25, 0.36); token 1: unclipped, 1.0 both; token 2 masked
    assert_close(out.loss, torch.tensor(0.5 * (0.36 + 1.0) / 2, **F64))
    assert_close(out.metrics["clip_frac"], torch.tensor(0.5, **F64))
    out.loss.backward()
    # the clipped branch wins on token 0, so it gets no gradient; token 1: 0.5 * 2 * (1 - 0) / 2
    assert_close(values.grad, torch.tensor([[0.0, 0.5, 0.0]], **F64))


def pact_inputs(ratios, logits, returns, mask=None):
    old = torch.full((1, len(ratios)), -1.0, **F64)
    return PACTInputs(
        value_logits=torch.tensor([logits], **F64, requires_grad=True),
        returns=torch.tensor([returns], **F64),
        new_logprobs=old + torch.tensor([ratios], **F64).log(),
        old_logprobs=old,
        mask=torch.ones(1, len(ratios), dtype=torch.bool) if mask is None else mask,
    )


def test_pact_weights_bce_by_the_updated_policy_ratio_and_masks_out_of_range():
    inp = pact_inputs([1.1, 1.2, 2.0], [0.0, math.log(3), 0.0], [1.0, 0.0, 1.0])
    out = pact_critic_loss(inp, PACTConfig(ratio_low=0.8, ratio_high=1.25))
    # BCE: -ln 0.5 and -ln(1 - 0.75); the third token's ratio 2.0 is out of range
    expected = (1.1 * LN2 + 1.2 * 2 * LN2) / 2
    assert_close(out.loss, torch.tensor(expected, **F64))
    assert_close(out.metrics["masked_frac"], torch.tensor(1 / 3, **F64))
    out.loss.backward()
    # d/dz = rho * (sigmoid(z) - y) / n_kept
    assert_close(inp.value_logits.grad, torch.tensor([[1.1 * -0.5 / 2, 1.2 * 0.75 / 2, 0.0]], **F64))


def test_pact_without_correction_is_plain_bce_on_every_token():
    inp = pact_inputs([1.1, 1.2, 2.0], [0.0, math.log(3), 0.0], [1.0, 0.0, 1.0])
    out = pact_critic_loss(inp, PACTConfig(importance_correction=False))
    assert_close(out.loss, torch.tensor((LN2 + 2 * LN2 + LN2) / 3, **F64))
    assert_close(out.metrics["masked_frac"], torch.tensor(0.0, **F64))


def test_pact_all_ratios_out_of_range_gives_zero_loss_and_grad():
    inp = pact_inputs([0.1, 5.0], [0.3, -0.2], [1.0, 0.0])
    out = pact_critic_loss(inp, PACTConfig())
    out.loss.backward()
    assert out.loss.item() == 0.0
    assert_close(inp.value_logits.grad, torch.zeros(1, 2, **F64))
    assert_close(out.metrics["masked_frac"], torch.tensor(1.0, **F64))


def test_pact_empty_mask_gives_zero_not_nan():
    inp = pact_inputs([1.0, 1.0], [0.3, -0.2], [1.0, 0.0], mask=torch.zeros(1, 2, dtype=torch.bool))
    out = pact_critic_loss(inp, PACTConfig())
    assert out.loss.item() == 0.0 and not torch.isnan(out.metrics["ratio_mean"])


def test_pact_minimiser_is_the_ratio_weighted_outcome():
    # one state seen three times: the optimum is sum(rho * R) / sum(rho) = 2.0 / 2.9
    ratios, returns = [1.2, 0.9, 0.8], [1.0, 0.0, 1.0]
    p = 2.0 / 2.9
    z = torch.tensor(math.log(p / (1 - p)), **F64, requires_grad=True)
    inp = pact_inputs(ratios, [0.0] * 3, returns)
    loss = pact_critic_loss(PACTInputs(z.expand(1, 3), inp.returns, inp.new_logprobs, inp.old_logprobs, inp.mask), PACTConfig()).loss
    loss.backward()
    assert_close(z.grad, torch.tensor(0.0, **F64), atol=1e-12, rtol=0)


def test_pact_gradcheck():
    inp = pact_inputs([1.1, 0.9, 1.0], [0.2, -0.4, 1.0], [1.0, 0.0, 1.0])
    f = lambda z: pact_critic_loss(PACTInputs(z, inp.returns, inp.new_logprobs, inp.old_logprobs, inp.mask), PACTConfig()).loss
    assert torch.autograd.gradcheck(f, (inp.value_logits,))
