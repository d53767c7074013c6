import math

import pytest
import torch
from torch.testing import assert_close

from kernels.advantages import dr_grpo_advantages, filter_groups, gae, grpo_advantages

S = math.sqrt(1.5)  # 0.1 / population std of [-0.1, -0.2, -0.3]


def test_grpo_advantages_are_standardised_per_group():
    # group 2: mean 2, population std sqrt(0.5)
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 2.0, 3.0, 2.0]])
    expected = torch.tensor([[1.0, -1.0, -1.0, 1.0], [-math.sqrt(2), 0.0, math.sqrt(2), 0.0]])
    assert_close(grpo_advantages(rewards, eps=0.0), expected)


def test_grpo_all_equal_group_gives_zero_not_nan():
    adv = grpo_advantages(torch.tensor([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]))
    assert_close(adv, torch.zeros(2, 3))


def test_grpo_single_rollout_group_gives_zero():
    assert_close(grpo_advantages(torch.tensor([[0.7]])), torch.zeros(1, 1))


def test_dr_grpo_subtracts_the_mean_only():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    assert_close(dr_grpo_advantages(rewards), torch.tensor([[0.5, -0.5, -0.5, 0.5], [0.0, 0.0, 0.0, 0.0]]))


def test_filter_on_outcome_drops_all_fail_groups_that_the_shaped_filter_keeps():
    outcomes = torch.tensor([[0, 0, 0], [1, 0, 1], [1, 1, 1]])
    lengths = torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0], [2.0, 2.0, 4.0]])
    shaped = outcomes - 0.1 * lengths
    assert filter_groups(outcomes, shaped, by="outcome").tolist() == [False, True, False]
    assert filter_groups(outcomes, shaped, by="shaped").tolist() == [True, True, True]


def test_phantom_advantage_of_an_all_fail_group():
    shaped = torch.tensor([[-0.1, -0.2, -0.3]])  # all wrong, lengths 1, 2, 3
    # std normalisation inflates a 0.1 length spread into full-size advantages; Dr. GRPO does not
    assert_close(grpo_advantages(shaped, eps=0.0), torch.tensor([[S, 0.0, -S]]))
    assert_close(dr_grpo_advantages(shaped), torch.tensor([[0.1, 0.0, -0.1]]))


def test_filter_rejects_unknown_signal():
    with pytest.raises(KeyError):
        filter_groups(torch.zeros(1, 2), torch.zeros(1, 2), by="std")


def test_gae_lambda_one_gives_outcome_minus_value():
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.8]])
    adv, ret = gae(rewards, values, torch.ones(1, 3, dtype=torch.bool))
    assert_close(adv, torch.tensor([[0.5, 0.4, 0.2]]))
    assert_close(ret, torch.tensor([[1.0, 1.0, 1.0]]))


def test_gae_td_and_discounted_cases():
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.8]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    adv0, _ = gae(rewards, values, mask, gamma=1.0, lam=0.0)
    assert_close(adv0, torch.tensor([[0.1, 0.2, 0.2]]))
    adv, _ = gae(rewards, values, mask, gamma=0.5, lam=0.5)
    # deltas [-0.2, -0.2, 0.2]; A2 = 0.2, A1 = -0.2 + 0.25 * 0.2, A0 = -0.2 + 0.25 * A1
    assert_close(adv, torch.tensor([[-0.2375, -0.15, 0.2]]))


def test_gae_skips_masked_holes_and_padding():
    mask = torch.tensor([[True, False, True, True], [True, True, False, False]])
    rewards = torch.tensor([[0.0, 5.0, 0.0, 1.0], [0.0, 1.0, 7.0, 0.0]])
    values = torch.tensor([[0.5, 99.0, 0.6, 0.8], [0.3, 0.4, 9.0, 9.0]])
    adv, ret = gae(rewards, values, mask)
    assert_close(adv, torch.tensor([[0.5, 0.0, 0.4, 0.2], [0.7, 0.6, 0.0, 0.0]]))
    assert_close(ret, torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]]))
