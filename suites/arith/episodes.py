"""Multi-turn episodes for STRIDE: a `chain` problem solved one operation per turn.

The episode opens with the first operation (`12+7`); the agent answers with the
intermediate value (turn 0); the environment then shows the next operation as an
observation (`*3`), and so on:

    <bos> 12+7 <sep> 19 <eos> <obs> *3 <sep> 57 <eos> <obs> -5 <sep> 52 <eos>

Turn k of the agent is the text `Problem.target(style)` of that single step (`19` in
answer style, `12+7=19#19` worked). The per-turn verifier compares it with the true
running value, not with the agent's own previous value: after a wrong turn every later
turn is wrong too, so the first failing turn is where the agent went wrong. The episode
succeeds when every turn is right (equivalently, the final one).

Token ids from `EpisodeBatch` follow `kernels.masks`: `turn_ids` is k on the tokens of
agent turn k (its <eos> included) and -1 elsewhere; `is_obs` marks the environment's
tokens (<obs> ... <sep>), which never carry loss. A turn that reaches its token budget
without <eos> ends the episode (counted as failed): the environment cannot read a turn
that never finished, and closing it with a token the agent did not emit would put an
off-policy token into the transcript."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor, nn

from kernels.model import sample
from suites.arith.tasks import Problem, Split, Style, apply_op, generate
from suites.arith.tokenizer import EOS, OBS, PAD, SEP, Tokenizer, left_pad
from suites.arith.verify import is_correct


@dataclass(frozen=True)
class Episode:
    """A chain problem split into turns."""

    problem: Problem
    start: int
    ops: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, problem: Problem) -> "Episode":
        if problem.category != "chain":
            raise ValueError(f"episodes are built from chain problems, got a {problem.category!r} problem")
        head, *rest = problem.prompt.split(";")
        split_at = next(i for i, c in enumerate(head) if c in "+-*")
        ops = [(head[split_at], int(head[split_at + 1 :]))] + [(p[0], int(p[1:])) for p in rest]
        return cls(problem, int(head[:split_at]), tuple(ops))

    @property
    def n_turns(self) -> int:
        return len(self.ops)

    def value(self, turn: int) -> int:
        """The true running value after turn `turn` (0-based)."""
        value = self.start
        for op, operand in self.ops[: turn + 1]:
            value = apply_op(value, op, operand)
        return value

    def step(self, turn: int) -> Problem:
        """Turn `turn` as a one-step problem: its `target(style)` is the turn's text."""
        before = self.start if turn == 0 else self.value(turn - 1)
        op, operand = self.ops[turn]
        after = self.value(turn)
        return Problem("chain", f"{before}{op}{operand}", str(after), (f"{before}{op}{operand}={after}",))

    def opening(self) -> str:
        op, operand = self.ops[0]
        return f"{self.start}{op}{operand}"

    def observation(self, turn: int) -> str:
        """What the environment shows before turn `turn` >= 1: the next operation."""
        op, operand = self.ops[turn]
        return f"{op}{operand}"

    def check_turn(self, turn: int, text: str) -> bool:
        """Per-turn verifier: does the agent's text give the true running value?"""
        return is_correct(text, str(self.value(turn)))


def episodes(n: int, seed: int, split: Optional[Split] = None) -> list[Episode]:
    """`n` distinct chain episodes (2-3 turns), deterministic in (n, seed, split)."""
    return [Episode.of(p) for p in generate("chain", n, seed, split)]


def transcript(
    tok: Tokenizer, episode: Episode, turns: Sequence[Sequence[int]], upcoming: bool = True
) -> tuple[list[int], list[int], list[bool]]:
    """Ids of an episode whose agent turns so far are `turns` (ids, each ending in <eos>
    except possibly a truncated last one) -> (ids, turn id per token, is_obs per token).
    With `upcoming`, and when the episode goes on, the ids end with the context the agent
    answers next (`... <obs> OP <sep>`); without, they end with the last turn."""
    ids = tok.encode_prompt(episode.opening())
    turn_ids, obs = [-1] * len(ids), [False] * len(ids)
    for k, turn in enumerate(turns):
        ids += list(turn)
        turn_ids += [k] * len(turn)
        obs += [False] * len(turn)
        if k + 1 < episode.n_turns and list(turn[-1:]) == [EOS] and (upcoming or k + 1 < len(turns)):
            shown = [OBS, *tok.encode(episode.observation(k + 1)), SEP]
            ids += shown
            turn_ids += [-1] * len(shown)
            obs += [True] * len(shown)
    return ids, turn_ids, obs


@dataclass(frozen=True)
class EpisodeBatch:
    """Played episodes, right-padded for scoring: tokens, mask, turn_ids, is_obs (B, T)."""

    tokens: Tensor
    mask: Tensor
    turn_ids: Tensor
    is_obs: Tensor
    turns: list[list[list[int]]]
    """Agent turn ids per episode, per turn."""
    turn_correct: list[list[bool]]
    """Per-turn verdicts; shorter than n_turns when the episode stopped early."""
    success: list[bool]
    """Every turn played and right."""


def batch(tok: Tokenizer, eps: Sequence[Episode], turns: Sequence[Sequence[Sequence[int]]]) -> EpisodeBatch:
    """Transcripts of `eps` with the given agent turns, as one right-padded batch, each
    ending with its last turn (no observation for a turn that was not played)."""
    rows = [transcript(tok, e, t, upcoming=False) for e, t in zip(eps, turns)]
    width = max(len(r[0]) for r in rows)
    tokens = torch.full((len(rows), width), PAD, dtype=torch.long)
    turn_ids = torch.full((len(rows), width), -1, dtype=torch.long)
    is_obs = torch.zeros((len(rows), width), dtype=torch.bool)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for b, (ids, tids, obs) in enumerate(rows):
        tokens[b, : len(ids)], turn_ids[b, : len(ids)] = torch.tensor(ids), torch.tensor(tids)
        is_obs[b, : len(ids)], mask[b, : len(ids)] = torch.tensor(obs), True
    verdicts = [[list(t[-1:]) == [EOS] and e.check_turn(k, tok.decode(t)) for k, t in enumerate(ts)] for e, ts in zip(eps, turns)]
    success = [len(v) == e.n_turns and all(v) for e, v in zip(eps, verdicts)]
    return EpisodeBatch(tokens, mask, turn_ids, is_obs, [[list(t) for t in ts] for ts in turns], verdicts, success)


StopRule = Callable[[EpisodeBatch], list[bool]]
"""The batch so far -> per episode, stop now? Called after every round of turns; STRIDE's
early stop plugs in here (score the batch with the teacher, per-turn sums over
`turn_ids`, then `kernels.masks.stride_stop_turn`)."""


def play(
    model: nn.Module,
    tok: Tokenizer,
    eps: Sequence[Episode],
    max_turn_tokens: int = 12,
    temperature: float = 1.0,
    generator: Optional[torch.Generator] = None,
    reuse: Optional[Sequence[Sequence[Sequence[int]]]] = None,
    stop: Optional[StopRule] = None,
) -> EpisodeBatch:
    """Play `eps` turn by turn with `model`, batched over the episodes still running.
    `reuse[b]` holds agent turns to keep as a fixed prefix (STRIDE's restart: generation
    resumes at turn len(reuse[b])); `stop` may end episodes after any turn."""
    turns = [[list(t) for t in r] for r in reuse] if reuse is not None else [[] for _ in eps]
    running = [len(t) < e.n_turns and (not t or t[-1][-1:] == [EOS]) for e, t in zip(eps, turns)]
    while any(running):
        rows = [b for b, r in enumerate(running) if r]
        contexts = [transcript(tok, eps[b], turns[b])[0] for b in rows]
        prompts, prompt_mask = left_pad(contexts)
        out = sample(model, prompts, max_turn_tokens, temperature, generator, prompt_mask, EOS)
        for i, b in enumerate(rows):
            new = out.tokens[i, prompts.shape[1] :][out.mask[i]].tolist()
            turns[b].append(new)
            running[b] = new[-1:] == [EOS] and len(turns[b]) < eps[b].n_turns
        if stop is not None:
            verdict = stop(batch(tok, eps, turns))
            running = [r and not s for r, s in zip(running, verdict)]
    return batch(tok, eps, turns)


def teacher_example(tok: Tokenizer, episode: Episode, style: Style) -> tuple[list[int], list[bool]]:
    """A correct transcript for supervised training -> (ids, loss mask: agent tokens only)."""
    turns = [tok.encode_completion(episode.step(k).target(style)) for k in range(episode.n_turns)]
    ids, turn_ids, _ = transcript(tok, episode, turns)
    return ids, [t >= 0 for t in turn_ids]

