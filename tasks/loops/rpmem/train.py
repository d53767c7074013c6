"""RPMem's two training stages, its write path and its recall measurement. Pure torch
over seeded sessions (`tasks.loops.rpmem.sessions`): no I/O.

- Stage 1 (`compile_loss`): compiler + decoder, one session from an empty state; the
  model with the LoRA only (no session text) must answer that session's questions.
  Deviation: the paper matches the frozen base reading the session; our tiny base is not
  trained to read, so its target is the session's exact answers (an oracle reader).
- Stage 2 (`merge_loss`): the merge gate only, sessions merged in time order; the loss is
  the answers' cross-entropy after every session (token-level mean over questions and
  sessions).

Recall (`stream`): a user's sessions are written one by one into a fixed-size memory;
after session n every key is asked and scored by greedy exact match."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from schemas.ids import content_id
from tasks.loops.rpmem.model import RPMem, answer_logits, encode_sessions
from tasks.loops.rpmem.sessions import ANSWERS, Session, user_sessions

Users = Sequence[Sequence[Session]]
"""Users' sessions in time order, every user with the same number of sessions."""


def answer_targets(sessions: Sequence[Session], keys: str) -> Tensor:
    """Index in `ANSWERS` of every key's answer after each session: (B, K)."""
    return torch.tensor([[ANSWERS.index(s.answer(k)) for k in keys] for s in sessions])


def qa_loss(base: nn.Module, states: Tensor, model: RPMem, memory: Tensor, sessions: Sequence[Session],
            keys: str) -> Tensor:
    """Mean cross-entropy of every key's answer under the LoRA decoded from `memory` (B, d_mem)."""
    logits = answer_logits(base, states, model.decoder(memory))  # (B, K, A)
    return F.cross_entropy(logits.flatten(0, 1), answer_targets(sessions, keys).flatten())


def compile_loss(base: nn.Module, states: Tensor, model: RPMem, users: Users, keys: str) -> Tensor:
    """Stage 1: each user's first session compiled alone; the decoded LoRA answers it."""
    first = [u[0] for u in users]
    return qa_loss(base, states, model, model.compiler(*encode_sessions([s.text for s in first])), first, keys)


def merge_loss(base: nn.Module, states: Tensor, model: RPMem, users: Users, keys: str) -> Tensor:
    """Stage 2: sessions merged in time order; mean of the answers' loss after each."""
    memory, losses = model.empty(len(users)), []
    for n in range(len(users[0])):
        sessions = [u[n] for u in users]
        memory, _, _ = model.gate(memory, model.compiler(*encode_sessions([s.text for s in sessions])))
        losses.append(qa_loss(base, states, model, memory, sessions, keys))
    return torch.stack(losses).mean()


def batch_users(seed: int, stage: str, step: int, batch: int, n_sessions: int, updates: int, keys: str) -> list:
    """The training users of one step of one stage (never a select or holdout user)."""
    return [user_sessions(seed, f"train.{stage}", step * batch + b, n_sessions, updates, keys) for b in range(batch)]


def train_steps(params: Iterable[nn.Parameter], loss_of: Callable[[int], Tensor], first_step: int,
                n_steps: int, lr: float) -> list[tuple[int, float, float]]:
    """Adam over `params` for steps first_step.. (fresh optimizer state per chunk), gradient
    norm clipped at 1; `loss_of(step)` builds each step's loss -> [(step, loss, wall_s)]."""
    params = list(params)
    opt = torch.optim.Adam(params, lr=lr)
    out = []
    for step in range(first_step, first_step + n_steps):
        start = time.perf_counter()
        loss = loss_of(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        out.append((step, float(loss.detach()), time.perf_counter() - start))
    return out


@dataclass(frozen=True)
class Write:
    """One session written into one user's memory."""

    user: int
    idx: int
    latent_hash: str
    """sha256 of the new memory state (float32 bytes): its content id."""
    write_ms: float
    """Per-user share of the batch's compile + merge time."""
    mean_keep: float
    mean_write: float


@torch.no_grad()
def stream(base: nn.Module, states: Tensor, model: RPMem, users: Users, keys: str) -> tuple[list[Write], Tensor]:
    """Write every user's sessions in order -> (writes, correct (U, N, K) bool): after
    session n, whether the greedy answer of each key is right."""
    memory, writes, correct = model.empty(len(users)), [], []
    for n in range(len(users[0])):
        sessions = [u[n] for u in users]
        start = time.perf_counter()
        memory, keep, write = model.gate(memory, model.compiler(*encode_sessions([s.text for s in sessions])))
        ms = 1000 * (time.perf_counter() - start) / len(users)
        pred = answer_logits(base, states, model.decoder(memory)).argmax(-1)  # (U, K)
        correct.append(pred == answer_targets(sessions, keys))
        writes += [Write(u, n, content_id(memory[u].float().numpy().tobytes()), ms, float(keep[u].mean()),
                         float(write[u].mean())) for u in range(len(users))]
    return writes, torch.stack(correct, 1)


def to_bytes(model: RPMem, meta: dict) -> bytes:
    """The modules' weights and `meta` (shape, base) as torch.save bytes: a candidate's artifact."""
    buffer = io.BytesIO()
    torch.save({"state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()}, "meta": meta}, buffer)
    return buffer.getvalue()


def from_bytes(data: bytes) -> tuple[RPMem, dict]:
    """Inverse of `to_bytes` (weights_only: no pickled code)."""
    blob = torch.load(io.BytesIO(data), weights_only=True)
    meta = blob["meta"]
    model = RPMem(meta["d_mem"], meta["d_model"], meta["rank"])
    model.load_state_dict(blob["state_dict"])
    return model, meta
