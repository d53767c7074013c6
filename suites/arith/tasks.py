"""Generated, verifiable problems for tiny character-level LMs, with worked solutions.

Every family is a seeded generator `(random.Random) -> Problem` plus a parser that
turns a prompt back into its Problem (answer re-derived by the same solver), so a
problem written by a model is checked by the code that generates them. Prompts are
compact (no instructions) because each character costs a position on 2 CPU cores:

| category | prompt | worked target (`Problem.target("worked")`) |
| --- | --- | --- |
| add   | `47+85` (2-3 digit operands)       | `7+5=12;4+8+1=13#132` (columns from the right, carry added) |
| sub   | `305-47` (a >= b, 2-3 digits)      | `15-7=8;10-4-1=5;3-0-1=2#258` (a borrow shows as 10 on the top digit, -1 on the next) |
| dsum  | `dsum 4821` (3-5 digits)           | `4+8=12;12+2=14;14+1=15#15` |
| rev   | `rev bdag` (3-6 letters of a-h)    | `g,a,d,b#gadb` |
| sort  | `sort 5183` (3-6 digits)           | `1,3,5,8#1358` |
| chain | `12+7;*3;-5` (ops left to right)   | `12+7=19;19*3=57;57-5=52#52` |

The answer-only target is just the answer. `rev` draws letters from a-h only, so that no
word of a privileged context (each has a letter outside a-h) can equal an answer; see
`suites.arith.contexts`.

Splits are a function of the prompt text alone (`split_of`: sha256, 8/1/1 of 10), so a
prompt can never sit in two splits, whatever seed or pool size produced it."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, Optional

Split = Literal["train", "select", "holdout"]
Style = Literal["worked", "answer"]

REV_LETTERS = "abcdefgh"
ANSWER_MARK = "#"
STEP_SEP = ";"


@dataclass(frozen=True)
class Problem:
    """One problem: the prompt the model reads, the exact answer, and the worked steps
    that lead to it (the L1 context and the teacher's supervised target)."""

    category: str
    prompt: str
    answer: str
    steps: tuple[str, ...]

    def target(self, style: Style = "worked") -> str:
        """What a model should write after the prompt: steps then `#answer`, or the answer."""
        if style == "answer":
            return self.answer
        return STEP_SEP.join(self.steps) + ANSWER_MARK + self.answer


def _digits(rng: random.Random, lo: int, hi: int) -> int:
    """A number with between lo and hi digits (no leading zero)."""
    n = rng.randint(lo, hi)
    return rng.randint(10 ** (n - 1), 10**n - 1)


def solve_add(a: int, b: int) -> Problem:
    xs, ys, steps, carry = str(a)[::-1], str(b)[::-1], [], 0
    for i in range(max(len(xs), len(ys))):
        terms = [d[i] for d in (xs, ys) if i < len(d)] + (["1"] if carry else [])
        total = sum(int(t) for t in terms)
        steps.append("+".join(terms) + f"={total}")
        carry = total // 10
    return Problem("add", f"{a}+{b}", str(a + b), tuple(steps))


def solve_sub(a: int, b: int) -> Problem:
    xs, ys, steps, borrow = str(a)[::-1], str(b)[::-1], [], 0
    for i in range(len(xs)):
        top, bottom = int(xs[i]), int(ys[i]) if i < len(ys) else 0
        value = top - borrow - bottom
        borrow_out = value < 0
        shown = top + 10 if borrow_out else top
        steps.append(f"{shown}-{bottom}" + ("-1" if borrow else "") + f"={value + 10 * borrow_out}")
        borrow = int(borrow_out)
    return Problem("sub", f"{a}-{b}", str(a - b), tuple(steps))


def solve_dsum(number: str) -> Problem:
    total, steps = int(number[0]), []
    for d in number[1:]:
        steps.append(f"{total}+{d}={total + int(d)}")
        total += int(d)
    return Problem("dsum", f"dsum {number}", str(total), tuple(steps))


def solve_rev(word: str) -> Problem:
    return Problem("rev", f"rev {word}", word[::-1], (",".join(word[::-1]),))


def solve_sort(number: str) -> Problem:
    ordered = "".join(sorted(number))
    return Problem("sort", f"sort {number}", ordered, (",".join(ordered),))


def apply_op(value: int, op: str, operand: int) -> int:
    return {"+": value + operand, "-": value - operand, "*": value * operand}[op]


def solve_chain(start: int, ops: tuple[tuple[str, int], ...]) -> Problem:
    value, steps = start, []
    for op, operand in ops:
        new = apply_op(value, op, operand)
        steps.append(f"{value}{op}{operand}={new}")
        value = new
    first_op, first = ops[0]
    rest = "".join(f"{STEP_SEP}{op}{n}" for op, n in ops[1:])
    return Problem("chain", f"{start}{first_op}{first}{rest}", str(value), tuple(steps))


def chain_ops(rng: random.Random, start: int, n_ops: int) -> tuple[tuple[str, int], ...]:
    """Ops that keep every intermediate value in [0, 999]: + 1-20, - 1-20 (at most the
    value), * 2-5."""
    ops, value = [], start
    for _ in range(n_ops):
        bounds = {"+": (1, min(20, 999 - value)), "-": (1, min(20, value)), "*": (2, 5 if value * 5 <= 999 else 1)}
        op = rng.choice([o for o, (lo, hi) in bounds.items() if lo <= hi])
        operand = rng.randint(*bounds[op])
        ops.append((op, operand))
        value = apply_op(value, op, operand)
    return tuple(ops)


def _gen_sub(rng: random.Random) -> Problem:
    a, b = sorted((_digits(rng, 2, 3), _digits(rng, 2, 3)), reverse=True)
    return solve_sub(a, b)


def _gen_chain(rng: random.Random) -> Problem:
    start = rng.randint(10, 50)
    return solve_chain(start, chain_ops(rng, start, rng.randint(2, 3)))


GENERATORS: dict[str, Callable[[random.Random], Problem]] = {
    "add": lambda rng: solve_add(_digits(rng, 2, 3), _digits(rng, 2, 3)),
    "sub": _gen_sub,
    "dsum": lambda rng: solve_dsum(str(_digits(rng, 3, 5))),
    "rev": lambda rng: solve_rev("".join(rng.choice(REV_LETTERS) for _ in range(rng.randint(3, 6)))),
    "sort": lambda rng: solve_sort("".join(rng.choice("0123456789") for _ in range(rng.randint(3, 6)))),
    "chain": _gen_chain,
}
"""Category -> seeded generator. Each draw uses only the `rng` it is given."""

CATEGORIES: tuple[str, ...] = tuple(GENERATORS)

_NUM = r"([1-9]\d{1,2})"
_PARSERS: list[tuple[re.Pattern[str], Callable[..., Optional[Problem]]]] = [
    (re.compile(rf"{_NUM}\+{_NUM}"), lambda a, b: solve_add(int(a), int(b))),
    (re.compile(rf"{_NUM}-{_NUM}"), lambda a, b: solve_sub(int(a), int(b)) if int(a) >= int(b) else None),
    (re.compile(r"dsum ([1-9]\d{2,4})"), solve_dsum),
    (re.compile(rf"rev ([{REV_LETTERS}]{{3,6}})"), solve_rev),
    (re.compile(r"sort (\d{3,6})"), solve_sort),
    (re.compile(r"([1-9]\d)([+\-*]\d{1,2})((?:;[+\-*]\d{1,2}){1,2})"), lambda s, first, rest: _parse_chain(s, first + rest)),
]


def _parse_chain(start: str, ops_text: str) -> Optional[Problem]:
    ops, value = [], int(start)
    if not 10 <= value <= 50:
        return None
    for part in ops_text.split(STEP_SEP):
        op, operand = part[0], int(part[1:])
        bounds = {"+": (1, 20), "-": (1, 20), "*": (2, 5)}[op]
        value = apply_op(value, op, operand)
        if not bounds[0] <= operand <= bounds[1] or not 0 <= value <= 999:
            return None
        ops.append((op, operand))
    return solve_chain(int(start), tuple(ops))


def parse_problem(prompt: str) -> Optional[Problem]:
    """The Problem whose prompt is exactly `prompt`, inside the generators' domain
    (operand sizes, letters, op bounds), or None. Used to check teacher-written problems."""
    for pattern, build in _PARSERS:
        match = pattern.fullmatch(prompt)
        if match:
            return build(*match.groups())
    return None


def split_of(prompt: str) -> Split:
    """train / select / holdout as 8 / 1 / 1 of 10 buckets of sha256(prompt)."""
    bucket = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big") % 10
    return "holdout" if bucket == 9 else "select" if bucket == 8 else "train"


def generate(category: str, n: int, seed: int, split: Optional[Split] = None, patience: int = 5000) -> list[Problem]:
    """`n` distinct problems of `category` (restricted to `split` if given), in draw order,
    from `random.Random(f"{category}:{seed}")`: the same arguments give the same list.
    Raises when `patience` draws in a row bring nothing new (the space is exhausted)."""
    if category not in GENERATORS:
        raise ValueError(f"unknown arith category {category!r}; known: {list(GENERATORS)}")
    rng, seen, out, misses = random.Random(f"{category}:{seed}"), set(), [], 0
    while len(out) < n:
        problem = GENERATORS[category](rng)
        if problem.prompt in seen or (split is not None and split_of(problem.prompt) != split):
            misses += 1
            if misses >= patience:
                raise ValueError(f"category {category!r} yielded only {len(out)} distinct {split or ''} problems of the {n} asked")
            continue
        seen.add(problem.prompt)
        out.append(problem)
        misses = 0
    return out


def stream(categories: Iterable[str], seed: int, split: Optional[Split] = "train") -> Callable[[], Problem]:
    """An endless draw of problems, category uniform, restricted to `split` (default
    train, so training never sees a select or holdout prompt). Repeats are possible."""
    rng, cats = random.Random(f"stream:{seed}"), list(categories)

    def draw() -> Problem:
        while True:
            problem = GENERATORS[rng.choice(cats)](rng)
            if split is None or split_of(problem.prompt) == split:
                return problem

    return draw
