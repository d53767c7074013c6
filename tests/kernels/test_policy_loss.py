import math

import pytest
import torch
from torch.testing import assert_close

from kernels.configs import PolicyLossConfig
from kernels.policy_loss import policy_loss
from kernels.types import PolicyInputs

# ratios 1.5 and 0.9 with A = +1; 0.5 and 1.1 (masked) with A = -1; clip 0.2
RATIOS = torch.tensor([[1.5, 0.9], [0.5, 1.1]], dtype=torch.float64)
MASK = torch.tensor([[True, True], [True, False]])
ADV = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
# per-token loss: -min(rA, clip(r)A) = [-1.2 (clipped), -0.9], [0.8 (clipped), masked]


def inputs(requires_grad=False, **kw):
    old = torch.tensor([[-1.0, -2.0], [-0.5, -1.5]], dtype=torch.float64)
    new = (old + RATIOS.log()).requires_grad_(requires_grad)
    return PolicyInputs(logprobs=new, old_logprobs=old, advantages=kw.get("advantages", ADV), mask=kw.get("mask", MASK), entropy=kw.get("entropy"))


@pytest.mark.parametrize(
    "aggregation, expected",
    [("token_mean", -1.3 / 3), ("seq_mean", (-1.05 + 0.8) / 2), ("seq_sum_constant", -1.3 / (2 * 4))],
)
def test_loss_values_per_normalisation(aggregation, expected):
    out = policy_loss(inputs(), PolicyLossConfig(aggregation=aggregation, norm_tokens=4))
    assert_close(out.loss, torch.tensor(expected, dtype=torch.float64))


def test_metrics_clip_fraction_kl_and_entropy():
    entropy = torch.tensor([[1.0, 2.0], [3.0, 100.0]], dtype=torch.float64)
    out = policy_loss(inputs(entropy=entropy), PolicyLossConfig())
    k3 = sum(r - 1 - math.log(r) for r in (1.5, 0.9, 0.5)) / 3
    assert_close(out.metrics["clip_frac"], torch.tensor(2 / 3, dtype=torch.float64))
    assert_close(out.metrics["approx_kl"], torch.tensor(k3, dtype=torch.float64))
    assert_close(out.metrics["entropy"], torch.tensor(2.0, dtype=torch.float64))
    assert not out.metrics["approx_kl"].requires_grad


def test_gradient_flows_only_through_unclipped_tokens():
    inp = inputs(requires_grad=True)
    policy_loss(inp, PolicyLossConfig()).loss.backward()
    # d/dlogp of -r * A / 3 at r = 0.9, A = 1; clipped and masked tokens give 0
    assert_close(inp.logprobs.grad, torch.tensor([[0.0, -0.3], [0.0, 0.0]], dtype=torch.float64))


def test_asymmetric_clip_high_lets_the_ratio_grow_further():
    out = policy_loss(inputs(), PolicyLossConfig(clip_low=0.2, clip_high=0.6))
    assert_close(out.loss, torch.tensor((-1.5 - 0.9 + 0.8) / 3, dtype=torch.float64))


def test_per_token_advantages_match_broadcast_ones():
    a = policy_loss(inputs(), PolicyLossConfig()).loss
    b = policy_loss(inputs(advantages=ADV.expand(2, 2)), PolicyLossConfig()).loss
    assert_close(a, b)


@pytest.mark.parametrize("aggregation", ["token_mean", "seq_mean", "seq_sum_constant"])
def test_empty_mask_gives_zero_loss_and_zero_grad(aggregation):
    inp = inputs(requires_grad=True, mask=torch.zeros(2, 2, dtype=torch.bool))
    out = policy_loss(inp, PolicyLossConfig(aggregation=aggregation))
    out.loss.backward()
    assert out.loss.item() == 0.0 and not torch.isnan(inp.logprobs.grad).any()
    assert out.metrics["clip_frac"].item() == 0.0


def test_gradcheck_away_from_clip_boundaries():
    old = torch.tensor([[-1.0, -2.0, -0.3]], dtype=torch.float64)
    adv = torch.tensor([[0.7, -1.2, 0.4]], dtype=torch.float64)
    mask = torch.tensor([[True, True, True]])
    cfg = PolicyLossConfig(aggregation="seq_mean")
    f = lambda lp: policy_loss(PolicyInputs(lp, old, adv, mask), cfg).loss
    new = (old + torch.tensor([[0.05, -0.1, 0.5]], dtype=torch.float64)).requires_grad_()
    assert torch.autograd.gradcheck(f, (new,))
