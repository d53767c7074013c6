"""Forward passes of the frozen base (the selectors' one model signal) and the students:
a copy of the base trained with one recipe on one group's rows. Deterministic for the
same rows and seed (CPU threads pinned)."""

from __future__ import annotations

import random
from typing import Sequence

import torch

from kernels.model import token_logprobs
from schemas.ids import seed_for
from suites.arith.lm import collate, train_supervised
from suites.arith.teacher import supervised_example
from suites.arith.tokenizer import Tokenizer
from tasks.loops.datasense.pool import Row
from tasks.training.policy import load_policy, pin_cpu_threads, save_checkpoint


def examples(rows: Sequence[Row]):
    tok = Tokenizer()
    return [supervised_example(tok, tok.encode_prompt(r.prompt), r.target) for r in rows]


@torch.no_grad()
def row_losses(base_blob: bytes, rows: Sequence[Row], batch: int = 64) -> dict[int, float]:
    """Each row's token-mean NLL of its target under the frozen base."""
    pin_cpu_threads()
    model = load_policy(base_blob, torch.device("cpu"))
    out: dict[int, float] = {}
    for i in range(0, len(rows), batch):
        chunk = rows[i:i + batch]
        tokens, mask, loss_mask = collate(examples(chunk))
        lp = token_logprobs(model, tokens, mask)
        keep = loss_mask[:, 1:].to(lp.dtype)
        per_row = -(lp * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1)
        out.update({r.row_id: float(v) for r, v in zip(chunk, per_row)})
    return out


def train_student(base_blob: bytes, rows: Sequence[Row], steps: int, batch_size: int, lr: float,
                  seed: str) -> bytes:
    """A fresh copy of the base after ``steps`` AdamW steps on batches drawn (seeded by
    ``seed``) from ``rows``; the checkpoint bytes."""
    pin_cpu_threads()
    model = load_policy(base_blob, torch.device("cpu"))
    rng = random.Random(f"student:{seed}")
    data = examples(rows)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_for("student", seed) % (2**31))
        train_supervised(model, lambda step: [data[rng.randrange(len(data))] for _ in range(batch_size)], steps,
                         lr=lr, warmup=min(10, steps))
    return save_checkpoint(model, None, steps)
