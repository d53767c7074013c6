"""Exact-match verification and the length-shaped reward of Phantom Advantages.

The answer of an output is the text after its last `#` (worked style) or the whole
output (answer-only style), with surrounding whitespace stripped. Nothing else is
normalised: `0132` is not `132` and `1 32` is not `132`, so a reward can never be earned
by a format the verifier had to guess at."""

from __future__ import annotations

from collections.abc import Sequence

from suites.arith.tasks import ANSWER_MARK


def extract_answer(output: str) -> str:
    """The final answer an output commits to (see the module docstring)."""
    return output.rsplit(ANSWER_MARK, 1)[-1].strip()


def is_correct(output: str, answer: str) -> bool:
    """Exact match of the extracted answer with the reference answer."""
    return extract_answer(output) == answer.strip()


def shaped_reward(correct: bool, length: int, coef: float = 0.1, max_length: int = 32) -> float:
    """Phantom Advantages' composite reward: 1[correct] - coef * length / max_length.

    `length` is the number of generated tokens (eos included, as the kernels count it);
    dividing by `max_length` (the generation budget) keeps the length term in
    [0, coef], so the paper's coefficients 0.1, 0.3, 0.5 mean "at most that much".
    Departs from the paper: it does not give the length scale; the spec writes
    correct - lambda * length, normalised here so lambda is comparable across budgets.

    Two wrong outputs of different lengths get different shaped rewards but the same
    outcome 0, which is why a group filter on the shaped reward keeps all-wrong groups
    that an outcome filter drops (`kernels.advantages.filter_groups`)."""
    if max_length <= 0:
        raise ValueError(f"max_length must be positive, got {max_length}")
    if not 0 <= length <= max_length:
        raise ValueError(f"length {length} is outside [0, max_length={max_length}]")
    return float(correct) - coef * length / max_length


def accuracy(outputs: Sequence[str], answers: Sequence[str]) -> float:
    """Fraction of outputs that match their answer exactly."""
    if len(outputs) != len(answers):
        raise ValueError(f"{len(outputs)} outputs but {len(answers)} answers")
    if not outputs:
        raise ValueError("accuracy of an empty batch is undefined")
    return sum(is_correct(o, a) for o, a in zip(outputs, answers)) / len(outputs)
