import pytest
import torch

from kernels.advantages import filter_groups, grpo_advantages
from suites.arith.verify import accuracy, extract_answer, is_correct, shaped_reward


def test_answer_is_after_the_last_mark_or_the_whole_output():
    assert extract_answer("7+5=12;4+8+1=13#132") == "132"
    assert extract_answer("132") == "132"
    assert extract_answer("1#2#3") == "3"
    assert extract_answer("12#") == ""


@pytest.mark.parametrize(
    ("output", "answer", "expected"),
    [
        ("132", "132", True),
        ("  132 ", "132", True),
        ("7+5=12#132\n", "132", True),
        ("# 132", "132", True),
        ("1 32", "132", False),
        ("0132", "132", False),
        ("132.", "132", False),
        ("13", "132", False),
        ("", "132", False),
        ("gadb", "gadb", True),
        ("-4", "-4", True),
    ],
)
def test_exact_match(output, answer, expected):
    assert is_correct(output, answer) is expected


def test_shaped_reward_by_hand():
    assert shaped_reward(True, 8, coef=0.1, max_length=32) == pytest.approx(1 - 0.1 * 8 / 32)
    assert shaped_reward(False, 16, coef=0.5, max_length=32) == pytest.approx(-0.25)
    assert shaped_reward(False, 0, coef=0.3, max_length=32) == 0.0
    assert shaped_reward(True, 32, coef=0.3, max_length=32) == pytest.approx(0.7)


def test_shaped_reward_refuses_lengths_outside_the_budget():
    with pytest.raises(ValueError, match="outside"):
        shaped_reward(True, 33, max_length=32)
    with pytest.raises(ValueError, match="positive"):
        shaped_reward(True, 1, max_length=0)


def test_all_wrong_group_passes_the_shaped_filter_but_not_the_outcome_filter():
    """Phantom Advantages: four wrong answers of different lengths."""
    lengths = [3, 9, 20, 32]
    outcomes = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    shaped = torch.tensor([[shaped_reward(False, n, 0.3, 32) for n in lengths]], dtype=torch.float64)
    assert filter_groups(outcomes, shaped, by="outcome").tolist() == [False]
    assert filter_groups(outcomes, shaped, by="shaped").tolist() == [True]
    phantom = grpo_advantages(shaped)
    assert phantom[0, 0] > 1.0  # the shortest wrong answer gets a full-size positive advantage


def test_accuracy_counts_exact_matches():
    assert accuracy(["1", "2#2", "3 "], ["1", "2", "4"]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="2 outputs but 1 answers"):
        accuracy(["1", "2"], ["1"])
