import math

import torch
from torch.testing import assert_close

from kernels.advantages import dr_grpo_advantages
from kernels.configs import GRPODropoutConfig
from kernels.grpo_dropout import grpo_dropout

E = math.e
ADV = dr_grpo_advantages(torch.tensor([[1.0, 1.0, 0.0, 0.0]], dtype=torch.float64))  # [0.5, 0.5, -0.5, -0.5]
OLD_LP = torch.tensor([[-1.0, -3.0, -2.0, -2.0]], dtype=torch.float64)  # group mean -2


def test_drops_the_likely_correct_rollout_and_recentres_with_old_probabilities():
    sel = grpo_dropout(ADV, OLD_LP, GRPODropoutConfig(n_drop=1))
    assert_close(sel.entropy_effect, torch.tensor([[0.5, -0.5, 0.0, 0.0]], dtype=torch.float64))
    assert sel.kept.tolist() == [[False, True, True, True]]
    # kept weights pi_old / sum: e^-3, e^-2, e^-2 -> 1 / (1 + 2e), e / (1 + 2e), e / (1 + 2e)
    centre = (0.5 * 1 - 0.5 * 2 * E) / (1 + 2 * E)
    expected = torch.tensor([[0.0, 0.5 - centre, -0.5 - centre, -0.5 - centre]], dtype=torch.float64)
    assert_close(sel.advantages, expected)
    # re-centred: the pi_old-weighted mean over the kept rollouts is zero
    w = torch.softmax(OLD_LP[0, 1:], 0)
    assert_close((w * sel.advantages[0, 1:]).sum(), torch.tensor(0.0, dtype=torch.float64))


def test_no_drop_still_recentres_on_all_rollouts():
    sel = grpo_dropout(ADV, OLD_LP, GRPODropoutConfig(n_drop=0))
    assert sel.kept.all()
    w = torch.softmax(OLD_LP[0], 0)
    assert_close(sel.advantages, ADV - (w * ADV).sum())


def test_all_zero_group_contributes_nothing():
    sel = grpo_dropout(torch.zeros(2, 4, dtype=torch.float64), OLD_LP.expand(2, 4), GRPODropoutConfig(n_drop=2))
    assert sel.kept.all()
    assert_close(sel.advantages, torch.zeros(2, 4, dtype=torch.float64))


def test_negative_advantage_or_low_probability_rollouts_are_never_dropped():
    adv = torch.tensor([[-0.5, 0.5, 0.5, -0.5]], dtype=torch.float64)
    old = torch.tensor([[-1.0, -3.0, -2.5, -1.5]], dtype=torch.float64)  # positive rollouts below mean -2
    sel = grpo_dropout(adv, old, GRPODropoutConfig(n_drop=2))
    assert sel.kept.all()


def test_drops_at_most_n_by_largest_effect_per_group():
    adv = torch.tensor([[0.5, 0.5, 0.5, -1.5], [-1.5, 0.5, 0.5, 0.5]], dtype=torch.float64)
    old = torch.tensor([[-1.0, -1.5, -0.5, -5.0], [-5.0, -0.5, -1.5, -1.0]], dtype=torch.float64)  # means -2
    sel = grpo_dropout(adv, old, GRPODropoutConfig(n_drop=2))
    # positive-advantage effects 0.5, 0.25, 0.75 (row 2 mirrored): the two largest go
    assert sel.kept.tolist() == [[False, True, False, True], [True, False, True, False]]
    sel = grpo_dropout(adv, old, GRPODropoutConfig(n_drop=1, min_effect=1.2))
    assert sel.kept.all()
