"""Prompt sources for DF-OPD: a tiny fixed pool, the full generated pool, or problems
the frozen teacher writes itself after the `<write>` instruction.

The spec's DF-OPD uses "one simple instruction, with no seed problems and no
filtering". `keep="all"` is that setting: every written text is a prompt, parsed when
it can be (an unparsed one has no answer and no category, which on-policy distillation
does not need). `keep="parsed"` (the default asked for here) keeps a written text only if

1. it ended with <eos> inside the token budget,
2. `tasks.parse_problem` reads it as a problem of the generators' domain (so its answer
   is re-derived by the same solver that generates the pool: verified by construction),
3. it is in the train split by `tasks.split_of` (a written prompt that happens to be a
   select or holdout prompt would contaminate evaluation), and
4. it has the asked category, when one was asked.

Duplicates are kept in both modes (the paper's point is that OPD barely needs distinct
prompts); `write_problems` reports how many were distinct."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Optional

import torch
from torch import nn

from kernels.model import sample
from suites.arith.tasks import Problem, parse_problem, split_of
from suites.arith.tokenizer import EOS, Tokenizer, left_pad

SourceKind = Literal["fixed8", "pool", "teacher"]
Keep = Literal["parsed", "all"]


@dataclass(frozen=True)
class Prompt:
    """A training prompt and where it came from; `problem` is None for an unparsed text."""

    text: str
    source: str
    problem: Optional[Problem]

    @property
    def category(self) -> Optional[str]:
        return None if self.problem is None else self.problem.category


def write_problems(
    teacher: nn.Module,
    n: int,
    seed: int,
    keep: Keep = "parsed",
    category: Optional[str] = None,
    temperature: float = 1.0,
    max_new_tokens: int = 16,
    max_rounds: int = 8,
) -> tuple[list[Prompt], dict[str, int]]:
    """`n` prompts written by `teacher` after `<write>` (or `<write> CATEGORY <sep>`) ->
    (prompts, counts: written, ended (with <eos>), parsed, passing (the keep="parsed"
    filter), kept, distinct). With
    keep="parsed", writes rounds of `n` texts until `n` pass the filter of the module
    docstring, and raises after `max_rounds` rounds."""
    tok = Tokenizer()
    generator = torch.Generator(device=next(teacher.parameters()).device).manual_seed(seed)
    kept: list[Prompt] = []
    counts = {"written": 0, "ended": 0, "parsed": 0, "passing": 0}
    for _ in range(max_rounds):
        prompts, mask = left_pad([tok.encode_write(category)] * n)
        rollout = sample(teacher, prompts, max_new_tokens, temperature, generator, mask, EOS)
        for row in rollout.tokens[:, prompts.shape[1] :].tolist():
            text, ended = tok.decode(row), EOS in row
            problem = parse_problem(text) if ended else None
            counts["written"] += 1
            counts["ended"] += ended
            counts["parsed"] += problem is not None
            counts["passing"] += _passes(problem, category)
            if keep == "all" or _passes(problem, category):
                kept.append(Prompt(text, "teacher", problem))
        if keep == "all" or len(kept) >= n:
            break
    if len(kept) < n:
        raise ValueError(
            f"the teacher wrote only {len(kept)} usable problems of the {n} asked in {max_rounds} rounds "
            f"({counts}); train it longer, raise max_rounds, or use keep='all'"
        )
    kept = kept[:n]
    counts.update(kept=len(kept), distinct=len({p.text for p in kept}))
    return kept, counts


def _passes(problem: Optional[Problem], category: Optional[str]) -> bool:
    return problem is not None and split_of(problem.prompt) == "train" and category in (None, problem.category)


def prompt_source(
    kind: SourceKind,
    train: Sequence[Problem],
    seed: int = 0,
    size: int = 8,
    teacher: Optional[nn.Module] = None,
    keep: Keep = "parsed",
    category: Optional[str] = None,
) -> list[Prompt]:
    """The prompt pool of one DF-OPD arm.

    - "fixed8": `size` (default 8) problems drawn from `train` by `seed` (the pool-size
      sweep {1, 8, 64} is this kind with another `size`);
    - "pool": all of `train`;
    - "teacher": `size` problems written by the frozen `teacher` (see `write_problems`).
    Batches are then drawn from the pool with `refill`, so every arm runs the same number
    of rollouts per step whatever its pool size."""
    if kind == "fixed8":
        if not 1 <= size <= len(train):
            raise ValueError(f"fixed pool size {size} must be in [1, {len(train)}] (the train problems given)")
        return [Prompt(p.prompt, "fixed8", p) for p in random.Random(f"fixed:{seed}").sample(list(train), size)]
    if kind == "pool":
        return [Prompt(p.prompt, "pool", p) for p in train]
    if kind == "teacher":
        if teacher is None:
            raise ValueError("prompt_source('teacher') needs the frozen teacher model")
        return write_problems(teacher, size, seed, keep, category)[0]
    raise ValueError(f"unknown prompt source {kind!r}; known: fixed8, pool, teacher")


def refill(pool: Sequence[Prompt], batch_size: int, step: int, seed: int = 0) -> list[Prompt]:
    """The prompts of one training step: `batch_size` draws with replacement from
    `pool`, deterministic in (seed, step) so a resumed run sees the same batches."""
    if not pool:
        raise ValueError("cannot draw a batch from an empty prompt pool")
    rng = random.Random(f"refill:{seed}:{step}")
    return [pool[rng.randrange(len(pool))] for _ in range(batch_size)]
