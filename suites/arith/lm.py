"""Supervised training, decoding and serialisation of the suite's TinyLMs (teacher and
student warm-up alike). Pure functions of their arguments: no files, no logging; the
model's bytes go to the blob store through the flows, not from here.

Supervised loss: mean negative log-likelihood over the tokens a loss mask marks
(token-level normalisation, clamped at one token), so prompts and contexts condition
the model without being learned."""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable, Sequence
from typing import Optional

import torch
from torch import Tensor, nn

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM, sample, token_logprobs
from suites.arith.contexts import contexts
from suites.arith.tasks import Problem, Style
from suites.arith.tokenizer import EOS, Tokenizer, left_pad, right_pad
from suites.arith.verify import is_correct

Example = tuple[list[int], list[bool]]
"""Token ids and, per id, whether it carries loss."""

GREEDY = 1e-4
"""Evaluation temperature: `kernels.model.sample` has no argmax mode, and at this
temperature every step puts all mass on the top token (ties aside)."""


def collate(examples: Sequence[Example]) -> tuple[Tensor, Tensor, Tensor]:
    """Examples -> (tokens, mask, loss_mask), each (B, T), right-padded."""
    tokens, mask = right_pad([ids for ids, _ in examples])
    loss_mask = torch.zeros_like(mask)
    for b, (_, keep) in enumerate(examples):
        loss_mask[b, : len(keep)] = torch.tensor(keep, dtype=torch.bool)
    return tokens, mask, loss_mask


def sft_loss(model: nn.Module, tokens: Tensor, mask: Tensor, loss_mask: Tensor) -> Tensor:
    """Token-mean NLL of the loss-masked tokens; tokens (B, T), masks (B, T)."""
    lp = token_logprobs(model, tokens, mask)  # (B, T-1) scores tokens[:, 1:]
    keep = loss_mask[:, 1:].to(lp.dtype)
    return -(lp * keep).sum() / keep.sum().clamp(min=1)


def train_supervised(
    model: nn.Module,
    next_batch: Callable[[int], Sequence[Example]],
    steps: int,
    lr: float = 3e-3,
    warmup: int = 50,
    weight_decay: float = 0.01,
) -> dict[str, list[float]]:
    """AdamW with linear warm-up then cosine decay to 10% of `lr`, gradient norm clipped
    at 1. `next_batch(step)` gives the examples of each step. Returns per-step `loss`
    and the cumulative wall time `wall_s`."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.98))

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = (step - warmup) / max(1, steps - warmup)
        return 0.1 + 0.45 * (1 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    model.train()
    losses, walls, start = [], [], time.perf_counter()
    for step in range(steps):
        loss = sft_loss(model, *collate(next_batch(step)))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        walls.append(time.perf_counter() - start)
    model.eval()
    return {"loss": losses, "wall_s": walls}


def complete(
    model: nn.Module,
    tok: Tokenizer,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float = GREEDY,
    generator: Optional[torch.Generator] = None,
    batch_size: int = 256,
) -> list[str]:
    """Decoded completions (up to <eos>) of prompt id lists, in chunks of `batch_size`."""
    out: list[str] = []
    for i in range(0, len(prompts), batch_size):
        tokens, mask = left_pad(prompts[i : i + batch_size])
        rollout = sample(model, tokens, max_new_tokens, temperature, generator, mask, EOS)
        out += [tok.decode(row) for row in rollout.tokens[:, tokens.shape[1] :].tolist()]
    return out


def to_bytes(model: TinyLM, meta: Optional[dict] = None) -> bytes:
    """The model's config, weights and the tokenizer vocabulary (so a checkpoint is never
    read with the wrong ids) as torch.save bytes; `meta` holds plain JSON-able extras."""
    buffer = io.BytesIO()
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    torch.save({"config": model.cfg.model_dump(), "state_dict": state, "vocab": list(Tokenizer.vocab), "meta": meta or {}}, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes) -> tuple[TinyLM, dict]:
    """Inverse of `to_bytes` -> (model in eval mode, meta). Loads with weights_only=True
    (no pickled code) and refuses a checkpoint made with another vocabulary."""
    blob = torch.load(io.BytesIO(data), weights_only=True)
    if tuple(blob["vocab"]) != Tokenizer.vocab:
        raise ValueError("checkpoint was saved with a different arith tokenizer vocabulary; its token ids would be misread")
    model = TinyLM(TinyLMConfig(**blob["config"]))
    model.load_state_dict(blob["state_dict"])
    return model.eval(), blob["meta"]


def accuracy_by_category(
    model: nn.Module,
    problems: Sequence[Problem],
    style: Style,
    level: Optional[str] = None,
    slack: int = 4,
) -> dict[str, float]:
    """Greedy exact-match accuracy per category (and "all") of `model` on `problems`,
    read with the privileged context `level` when given. The token budget is the
    longest target plus `slack`."""
    if not problems:
        raise ValueError("no problems to evaluate; the split or category selection is empty")
    tok = Tokenizer()
    ctx = [None if level is None else contexts(p)[level] for p in problems]
    prompts = [tok.encode_prompt(p.prompt, c) for p, c in zip(problems, ctx)]
    budget = max(len(p.target(style)) for p in problems) + slack
    outputs = complete(model, tok, prompts, budget)
    hits: dict[str, list[bool]] = {}
    for p, out in zip(problems, outputs):
        hits.setdefault(p.category, []).append(is_correct(out, p.answer))
    result = {c: sum(h) / len(h) for c, h in hits.items()}
    result["all"] = sum(sum(h) for h in hits.values()) / len(problems)
    return result
