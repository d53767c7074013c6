"""The arith suite: generated, verifiable problems for post-training tiny LMs.

Its candidates are model weights, not programs, so it does not implement the program
`Suite` ABC (no seed program, no sandbox runner); it keeps that ABC's vocabulary
(`Case`, `Verdict`, splits, `scorer_version`) so the cases and scores tables read the
same. The interface the training flows use:

- `cases(split)` / `problems(split)`: the pool, split train / select / holdout by a hash
  of the prompt (`tasks.split_of`); a case's payload is JSON-able: prompt, answer,
  category, target, and the five privileged contexts by level name.
- `encode_prompts(cases, level=None)` -> left-padded (tokens, mask) for
  `kernels.model.sample`; with `level`, each prompt carries that privileged context
  (the teacher's view). `tokenizer.splice` re-reads a student's completions under it.
- `decode(rollout_tokens)` -> completion texts; `score_outputs(cases, outputs)` ->
  `Verdict`s with `correct` (0/1, the primary metric) and `length`; `accuracy`.
- `rewards(cases, outputs, lengths, coef, max_length)` -> (outcomes, shaped rewards),
  both (B,), for GRPO and the Phantom Advantages filter.
- `evaluate(model, split, level)` -> greedy accuracy per category and "all".
- `max_new_tokens`: a generation budget that fits every target of the pool.

Multi-turn episodes (`suites.arith.episodes`), the teacher (`suites.arith.teacher`) and
the DF-OPD prompt sources (`suites.arith.prompts`) sit beside it."""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from functools import cached_property
from typing import Optional

import torch
from torch import Tensor, nn

from suites.arith import contexts as ctx
from suites.arith import gym, tasks, verify
from suites.arith.lm import accuracy_by_category
from suites.arith.tasks import CATEGORIES, Problem, Split, Style, generate, split_of
from suites.arith.tokenizer import Tokenizer, left_pad
from suites.arith.verify import extract_answer, is_correct, shaped_reward
from suites.base import Case, Verdict


class Arith:
    """Cases of the chosen categories (and reasoning-gym tasks), `n_per_category` each
    before splitting, generated from `seed`."""

    name = "arith"
    primary_metric = "correct"
    artifact_kind = "weights"
    candidate = "the weights of a tiny transformer policy (a checkpoint)"
    reference = "the SFT warm start of the same seed (exact-match accuracy)"

    def __init__(
        self,
        categories: Sequence[str] = CATEGORIES,
        n_per_category: int = 500,
        seed: int = 0,
        style: Style = "worked",
        gym_tasks: Sequence[str] = (),
    ):
        unknown = sorted(set(categories) - set(CATEGORIES))
        if unknown:
            raise ValueError(f"unknown arith categories {unknown}; known: {list(CATEGORIES)}")
        if n_per_category < 10:
            raise ValueError(f"n_per_category={n_per_category} leaves the select and holdout splits nearly empty; use >= 10")
        self.categories, self.n_per_category, self.seed = tuple(categories), n_per_category, seed
        self.style, self.gym_tasks = style, tuple(gym_tasks)
        self.tokenizer = Tokenizer()

    @cached_property
    def _pool(self) -> list[Problem]:
        """Own categories first, then the gym's problems whose prompt is new (a gym sum
        like `35+86` is also an `add` prompt: one prompt, one case)."""
        pool = [p for c in self.categories for p in generate(c, self.n_per_category, self.seed)]
        seen = {p.prompt for p in pool}
        for task in self.gym_tasks:
            for p in gym.gym_problems(task, self.n_per_category, self.seed):
                if p.prompt not in seen:
                    seen.add(p.prompt)
                    pool.append(p)
        return pool

    def problems(self, split: Optional[Split] = None) -> list[Problem]:
        """The pool's problems in generation order, optionally of one split."""
        return [p for p in self._pool if split is None or split_of(p.prompt) == split]

    def cases(self, split: Optional[Split] = None) -> list[Case]:
        """The pool as `Case`s; case_id is a hash of the suite name and the prompt."""
        return [self.case(p) for p in self.problems(split)]

    def case(self, problem: Problem) -> Case:
        payload = {
            "prompt": problem.prompt,
            "answer": problem.answer,
            "category": problem.category,
            "target": problem.target(self.style),
            "contexts": ctx.contexts(problem),
        }
        case_id = hashlib.sha256(f"{self.name}:{problem.prompt}".encode()).hexdigest()[:16]
        return Case(case_id, split_of(problem.prompt), payload)

    @cached_property
    def max_new_tokens(self) -> int:
        """Longest target of the pool (in this suite's style) plus its <eos> and 3 spare."""
        return max(len(p.target(self.style)) for p in self._pool) + 4

    def encode_prompts(self, cases: Sequence[Case], level: Optional[str] = None) -> tuple[Tensor, Tensor]:
        """Left-padded prompt batch (B, P) and mask; with `level` (a name in
        `contexts.LEVELS`) each prompt carries that privileged context."""
        if level is not None and level not in ctx.LEVELS:
            raise ValueError(f"unknown context level {level!r}; levels: {list(ctx.LEVELS)}")
        rows = [
            self.tokenizer.encode_prompt(c.payload["prompt"], None if level is None else c.payload["contexts"][level])
            for c in cases
        ]
        return left_pad(rows)

    def decode(self, completions: Tensor) -> list[str]:
        """Generated ids (B, N), e.g. `rollout.tokens[:, P:]` -> texts up to each <eos>."""
        return [self.tokenizer.decode(row) for row in completions.tolist()]

    def score(self, case: Case, output: str) -> Verdict:
        """Exact match of the output's answer; a wrong answer is a valid, zero-scored output."""
        correct = is_correct(output, case.payload["answer"])
        reason = None if correct else f"answer {extract_answer(output)!r} != {case.payload['answer']!r}"
        return Verdict(True, {"correct": float(correct), "length": float(len(output))}, reason)

    def score_outputs(self, cases: Sequence[Case], outputs: Sequence[str]) -> list[Verdict]:
        if len(cases) != len(outputs):
            raise ValueError(f"{len(cases)} cases but {len(outputs)} outputs")
        return [self.score(c, o) for c, o in zip(cases, outputs)]

    def accuracy(self, cases: Sequence[Case], outputs: Sequence[str]) -> float:
        """Fraction of exact matches over a non-empty batch."""
        return verify.accuracy(outputs, [c.payload["answer"] for c in cases])

    def rewards(
        self, cases: Sequence[Case], outputs: Sequence[str], lengths: Sequence[int], coef: float, max_length: int
    ) -> tuple[Tensor, Tensor]:
        """(binary outcomes, shaped rewards), both (B,) float64. `lengths` are generated
        token counts (`rollout.mask.sum(-1)`); store both columns: the group filter must
        read the outcomes (Phantom Advantages)."""
        outcomes = [v.metrics["correct"] for v in self.score_outputs(cases, outputs)]
        shaped = [shaped_reward(bool(o), int(n), coef, max_length) for o, n in zip(outcomes, lengths)]
        return torch.tensor(outcomes, dtype=torch.float64), torch.tensor(shaped, dtype=torch.float64)

    def evaluate(self, model: nn.Module, split: Split = "holdout", level: Optional[str] = None) -> dict[str, float]:
        """Greedy exact-match accuracy of `model` on a split, per category and "all"."""
        return accuracy_by_category(model, self.problems(split), self.style, level)

    def check_data(self) -> int:
        """arith generates its cases; it reads no reference data."""
        return 0

    def scorer_version(self) -> str:
        """Hash of the sources that decide a score: the verifier and the generators."""
        source = "".join(inspect.getsource(m) for m in (tasks, verify, gym))
        return hashlib.sha256(source.encode()).hexdigest()[:16]
