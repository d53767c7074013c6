"""Character-level tokenizer of the arith suite, shared by student and teacher (so a
teacher scores a student's tokens without re-tokenising).

Ids 0-7 are special tokens, then one id per character of `CHARS`. Text never encodes
to a special token: specials enter only through the structured encoders below, so
`decode(encode(text)) == text` for every text over `CHARS`.

Sequence layouts (ids, shown by name):

- prompt:      <bos> PROMPT <sep>
- with hint:   <bos> <hint> CONTEXT </hint> PROMPT <sep>
- completion:  TEXT <eos>
- write:       <bos> <write> [CATEGORY <sep>]      (DF-OPD: the teacher writes PROMPT <eos>)
- episode:     <bos> PROMPT <sep> TURN <eos> <obs> OBS <sep> TURN <eos> ...

Prompt batches are LEFT-padded with `<pad>` and a False mask, which is what
`kernels.model.sample` expects (positions count real tokens only, so a left-padded row
scores like the unpadded one) and keeps every row's generation aligned at column P."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

import torch
from torch import Tensor

SPECIALS: tuple[str, ...] = ("<pad>", "<bos>", "<eos>", "<sep>", "<hint>", "</hint>", "<write>", "<obs>")
CHARS = "0123456789abcdefghijklmnopqrstuvwxyz +-*=#;,:()"
"""Every character a prompt, context, solution or answer may contain."""

PAD, BOS, EOS, SEP, HINT, HINT_END, WRITE, OBS = range(len(SPECIALS))


class Tokenizer:
    """Characters <-> ids; see the module docstring for the layouts."""

    vocab: tuple[str, ...] = SPECIALS + tuple(CHARS)
    pad_id, bos_id, eos_id, sep_id = PAD, BOS, EOS, SEP
    hint_id, hint_end_id, write_id, obs_id = HINT, HINT_END, WRITE, OBS

    def __init__(self) -> None:
        self._ids = {c: i + len(SPECIALS) for i, c in enumerate(CHARS)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def encode(self, text: str) -> list[int]:
        """Ids of the characters of `text`; a character outside `CHARS` is refused."""
        try:
            return [self._ids[c] for c in text]
        except KeyError as err:
            bad = err.args[0]
            raise ValueError(
                f"character {bad!r} at position {text.index(bad)} of {text!r} is not in the arith "
                f"tokenizer's alphabet {CHARS!r}"
            ) from None

    def decode(self, ids: Sequence[int], stop_at_eos: bool = True) -> str:
        """Text of `ids`: special tokens are dropped (pad, bos, ...), decoding stops at the
        first <eos> unless `stop_at_eos` is False."""
        out = []
        for i in ids:
            i = int(i)
            if i == EOS and stop_at_eos:
                break
            if i >= len(SPECIALS):
                out.append(self.vocab[i])
        return "".join(out)

    def render(self, ids: Sequence[int]) -> str:
        """Every token, specials by name: for logs and test messages."""
        return "".join(self.vocab[int(i)] for i in ids)

    def encode_prompt(self, prompt: str, context: Optional[str] = None) -> list[int]:
        """<bos> [<hint> CONTEXT </hint>] PROMPT <sep>: what the model reads before answering."""
        hint = [] if context is None else [HINT, *self.encode(context), HINT_END]
        return [BOS, *hint, *self.encode(prompt), SEP]

    def encode_completion(self, text: str) -> list[int]:
        """TEXT <eos>: a target the model should write after a prompt."""
        return [*self.encode(text), EOS]

    def encode_write(self, category: Optional[str] = None) -> list[int]:
        """<bos> <write> [CATEGORY <sep>]: the instruction after which a teacher writes a problem."""
        return [BOS, WRITE] + ([] if category is None else [*self.encode(category), SEP])


def left_pad(rows: Sequence[Sequence[int]], pad_id: int = PAD) -> tuple[Tensor, Tensor]:
    """Rows of ids -> (tokens (B, P), mask (B, P)), left-padded: every row ends at column P-1."""
    if not rows:
        raise ValueError("left_pad needs at least one row")
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for b, r in enumerate(rows):
        if r:
            tokens[b, width - len(r) :] = torch.tensor(list(r), dtype=torch.long)
            mask[b, width - len(r) :] = True
    return tokens, mask


def right_pad(rows: Sequence[Sequence[int]], pad_id: int = PAD) -> tuple[Tensor, Tensor]:
    """Rows of ids -> (tokens (B, T), mask (B, T)), right-padded (training batches)."""
    if not rows:
        raise ValueError("right_pad needs at least one row")
    width = max(len(r) for r in rows)
    tokens = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for b, r in enumerate(rows):
        tokens[b, : len(r)] = torch.tensor(list(r), dtype=torch.long)
        mask[b, : len(r)] = True
    return tokens, mask


def splice(prompt_tokens: Tensor, prompt_mask: Tensor, completion: Tensor, completion_mask: Tensor) -> tuple[Tensor, Tensor]:
    """A (left-padded) prompt batch (B, P) followed by completions (B, N) -> (tokens, mask)
    of shape (B, P + N). The usual use: re-read a student's sampled completions
    (`rollout.tokens[:, P_student:]`, `rollout.mask`) under a teacher prompt that carries a
    privileged context; `token_logprobs(teacher, tokens, mask)[:, P - 1:]` is then aligned
    with `rollout.logprobs`."""
    if prompt_tokens.shape[0] != completion.shape[0]:
        raise ValueError(f"{prompt_tokens.shape[0]} prompts but {completion.shape[0]} completions")
    tokens = torch.cat([prompt_tokens, completion.to(prompt_tokens.device)], dim=1)
    mask = torch.cat([prompt_mask.bool(), completion_mask.to(prompt_mask.device).bool()], dim=1)
    return tokens, mask
