import pytest
import torch

from kernels.configs import STRIDEConfig, TwoEndConfig
from kernels.masks import (
    choose_restart_turn,
    compact,
    random_step_keep,
    stride_loss_mask,
    stride_stop_turn,
    two_end_keep,
)

STEPS = torch.tensor(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],  # ten one-token steps: centres 0.05 .. 0.95
        [0, 0, 1, 1, 1, 1, 2, 2, 3, 3],  # centres 0.1, 0.4, 0.7, 0.9
    ]
)


def test_two_end_masks_the_middle_steps():
    keep = two_end_keep(STEPS, TwoEndConfig(head_frac=0.4, middle_frac=0.2))
    assert keep.tolist() == [
        [True, True, True, True, False, False, True, True, True, True],
        [True, True, False, False, False, False, True, True, True, True],
    ]


def test_two_end_keeps_prompt_and_answer_tokens_and_whole_steps():
    ids = torch.tensor([[-1, -1, 0, 0, 1, 1, 1, 2, 2, -1]])  # prompt, 7 trace tokens, answer
    keep = two_end_keep(ids, TwoEndConfig(head_frac=0.3, middle_frac=0.4))  # step 1 centre 3.5/7 = 0.5
    assert keep.tolist() == [[True, True, True, True, False, False, False, True, True, True]]


def test_two_end_config_refuses_a_negative_tail():
    with pytest.raises(ValueError, match="tail"):
        TwoEndConfig(head_frac=0.9, middle_frac=0.2)


def test_random_control_masks_as_many_whole_steps():
    keep = two_end_keep(STEPS, TwoEndConfig())
    rand = random_step_keep(STEPS, keep, torch.Generator().manual_seed(3))
    again = random_step_keep(STEPS, keep, torch.Generator().manual_seed(3))
    assert torch.equal(rand, again)
    for row in range(2):
        masked_steps = STEPS[row][~rand[row]].unique()
        assert len(masked_steps) == len(STEPS[row][~keep[row]].unique())
        assert (~rand[row][torch.isin(STEPS[row], masked_steps)]).all()  # whole steps only


def test_compact_deletes_and_left_aligns():
    tokens, mask = compact(torch.tensor([[1, 2, 3, 4, 5]]), torch.tensor([[True, False, False, True, True]]), pad_id=0)
    assert tokens.tolist() == [[1, 4, 5, 0, 0]]
    assert mask.tolist() == [[True, True, True, False, False]]


def test_stride_stops_on_the_cumulative_mean_of_new_turns():
    lp_sum = torch.tensor([[-1.0, -2.0, -9.0, -1.0], [-1.0, -2.0, -9.0, -1.0], [-1.0, -1.0, -1.0, -1.0], [-1.0, -10.0, -1.0, -1.0]])
    tokens = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], [1, 10, 1, 1]])
    restart = torch.tensor([0, 3, 0, 0])
    stop = stride_stop_turn(lp_sum, tokens, restart, STRIDEConfig(stop_threshold=-2.0))
    # row 0: means -1, -1.5, -4 -> turn 2; row 1: only turn 3 is new, mean -1 -> none (4)
    # row 2: never; row 3: token-weighted (-11) / 11 = -1 -> none
    assert stop.tolist() == [2, 4, 4, 4]


def test_stride_loss_mask_covers_new_turns_through_the_stop_turn_without_observations():
    turn_ids = torch.tensor([[-1, -1, 0, 0, 1, 1, 2, 2, 3]])
    is_obs = torch.tensor([[False, False, False, False, False, True, False, True, False]])
    mask = stride_loss_mask(turn_ids, is_obs, torch.tensor([1]), torch.tensor([2]), torch.ones(1, 9, dtype=torch.bool))
    assert torch.nonzero(mask[0]).flatten().tolist() == [4, 6]


def test_restart_at_the_weakest_turn_of_the_leading_passing_run():
    scores = torch.tensor(
        [
            [-0.5, -0.9, -0.2, -3.0, -0.1],  # run 0..2, weakest turn 1
            [-2.0, -0.1, -0.1, -0.1, -0.1],  # first turn fails -> fresh start
            [-0.3, -0.6, -0.6, 0.0, 0.0],  # ties -> earliest; turns 3-4 not stored
            [0.0, 0.0, 0.0, 0.0, 0.0],  # not in the buffer
        ]
    )
    turn_mask = torch.tensor([[True] * 5, [True] * 5, [True, True, True, False, False], [False] * 5])
    assert choose_restart_turn(scores, turn_mask, STRIDEConfig(pass_threshold=-1.0)).tolist() == [1, 0, 1, 0]
