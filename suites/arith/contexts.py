"""Privileged teacher contexts for the Self-Teacher Context levels, compiled from
templates (the offline stand-in for the paper's hint compiler):

| level | name     | content (example for `47+85`) | may reveal the answer |
| --- | --- | --- | --- |
| L1 | solution | the worked solution `7+5=12;4+8+1=13#132` | yes |
| L2 | method   | how to solve this instance: `columns from right, carry yes,no` | no |
| L3 | angle    | what the answer looks like, method-agnostic: `three digits, even` | no |
| L4 | category | `addition` | no |
| L5 | answer   | `132` | yes |

L2-L4 hold no digit, and every word in them has a letter outside a-h, while every
answer is digits (possibly signed) or letters from a-h: so no L2-L4 context can contain
an answer as a whole token. `leaks` audits that instead of trusting it (the paper found
leaks in its compiled hints), and `audit` records one flag per level for the `hints`
table (problem_id, level, tokens, leak_flag).

Departs from the paper: hints are templated per category with instance features
(carry pattern, answer length, parity), not written by an LLM from a reference solution."""

from __future__ import annotations

import re

from suites.arith.tasks import Problem

LEVELS: tuple[str, ...] = ("solution", "method", "angle", "category", "answer")
"""Level names in order: LEVELS[k - 1] is level Lk."""

SECRET_LEVELS: tuple[str, ...] = ("method", "angle", "category")
"""L2-L4: must not reveal the answer."""

_COUNT = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")

_METHOD = {
    "dsum": "sum digits left to right",
    "rev": "write letters from last to first",
    "sort": "write digits from smallest to largest",
    "chain": "apply ops in order",
    "rg_chain_sum": "apply ops in order",
}

CATEGORY_NAMES = {
    "add": "addition",
    "sub": "subtraction",
    "dsum": "digit sum",
    "rev": "reversal",
    "sort": "sorting",
    "chain": "chain of ops",
    "rg_chain_sum": "chain sum",
}


def _column_flags(problem: Problem) -> str:
    """yes/no per column step but the last: did it carry (add: the column sum is >= 10)
    or borrow (sub: the top digit shows with its borrowed 10, so it has two digits)?"""
    if problem.category == "add":
        flags = [int(step.rsplit("=", 1)[1]) >= 10 for step in problem.steps[:-1]]
    else:
        flags = [len(step.split("-", 1)[0]) == 2 for step in problem.steps[:-1]]
    return ",".join("yes" if flag else "no" for flag in flags)


def method(problem: Problem) -> str:
    """L2: the procedure for this instance, without its result."""
    if problem.category == "add":
        return f"columns from right, carry {_column_flags(problem)}"
    if problem.category == "sub":
        return f"columns from right, borrow {_column_flags(problem)}"
    return _METHOD[problem.category]


def angle(problem: Problem) -> str:
    """L3: a method-agnostic view of the answer: its length, and parity or letters."""
    answer = problem.answer.lstrip("-")
    if answer.isdigit():
        kind = "digits" if len(answer) > 1 else "digit"
        sign = "negative, " if problem.answer.startswith("-") else ""
        return f"{sign}{_COUNT[min(len(answer), 10)]} {kind}, {'even' if int(answer) % 2 == 0 else 'odd'}"
    return f"{_COUNT[min(len(answer), 10)]} letters, same as given"


def contexts(problem: Problem) -> dict[str, str]:
    """All five levels of one problem, by level name."""
    return {
        "solution": problem.target("worked"),
        "method": method(problem),
        "angle": angle(problem),
        "category": CATEGORY_NAMES[problem.category],
        "answer": problem.answer,
    }


def leaks(context: str, answer: str) -> bool:
    """Does `context` contain `answer` as a whole token (not inside a longer number or
    word)? `132` leaks in `so 132.` but not in `1320`; `gad` leaks in `a gad b`, not in `gadb`."""
    pattern = rf"(?<![0-9a-z]){re.escape(answer.strip())}(?![0-9a-z])"
    return re.search(pattern, context) is not None


def audit(problem: Problem, compiled: dict[str, str]) -> dict[str, bool]:
    """Leak flag per level of one problem's contexts; only L2-L4 must be False."""
    return {level: leaks(text, problem.answer) for level, text in compiled.items()}


def leaked_levels(problem: Problem, compiled: dict[str, str]) -> list[str]:
    """The secret levels (L2-L4) whose context reveals the answer: empty when clean."""
    flags = audit(problem, compiled)
    return [level for level in SECRET_LEVELS if flags[level]]
