"""Problems from `reasoning-gym` (procedural generators that run offline), adapted to
this suite's compact prompts, worked targets and exact-match answers.

Only tasks a character-level TinyLM can learn are adapted: `chain_sum` (sums and
differences of 2-3 numbers of 1-2 digits). The gym's wording ("State the final answer
to the following arithmetic problem: ... =") is dropped; the prompt is its expression
without spaces (`98+93-77`), the category `rg_chain_sum`. The worked target folds the
terms left to right (`98+93=191;191-77=114#114`), and the adapter checks that its fold
equals the gym's answer, so the gym stays the ground truth.

`reasoning-gym` is an optional dependency, imported only when these problems are
asked for; the version this adapter was checked against is `GYM_VERSION`."""

from __future__ import annotations

import re
from typing import Any

from suites.arith.tasks import Problem

GYM_VERSION = "0.1.25"

GYM_TASKS: dict[str, dict[str, Any]] = {
    "chain_sum": {"min_terms": 2, "max_terms": 3, "min_digits": 1, "max_digits": 2, "allow_negation": False},
}
"""Adapted task -> the generator parameters that keep it within a tiny model's reach."""


def fold_terms(expression: str, category: str) -> Problem:
    """A `+`/`-` expression of non-negative integers, folded left to right."""
    tokens = re.findall(r"\d+|[+-]", expression)
    value, steps = int(tokens[0]), []
    for op, term in zip(tokens[1::2], tokens[2::2]):
        new = value + int(term) if op == "+" else value - int(term)
        steps.append(f"{value}{op}{term}={new}")
        value = new
    return Problem(category, expression, str(value), tuple(steps))


def gym_problems(task: str, n: int, seed: int) -> list[Problem]:
    """`n` problems of the reasoning-gym task `task` (a key of `GYM_TASKS`) from the
    gym's own seeded generator: the same (n, seed) give the same list."""
    if task not in GYM_TASKS:
        raise ValueError(f"reasoning-gym task {task!r} is not adapted; adapted: {list(GYM_TASKS)}")
    try:
        import reasoning_gym
    except ImportError as err:
        raise ImportError(
            f"gym task {task!r} needs the optional package reasoning-gym (checked with "
            f"reasoning-gym=={GYM_VERSION}); install it or leave gym_tasks empty"
        ) from err
    dataset = reasoning_gym.create_dataset(task, size=n, seed=seed, **GYM_TASKS[task])
    problems = []
    for item in dataset:
        problem = fold_terms(item["metadata"]["expression"].replace(" ", ""), f"rg_{task}")
        if problem.answer != item["answer"]:
            raise ValueError(
                f"reasoning-gym {task} item {item['metadata']['source_index']} (seed {seed}) says "
                f"{item['metadata']['expression']} = {item['answer']}, the left fold gives {problem.answer}"
            )
        problems.append(problem)
    return problems
