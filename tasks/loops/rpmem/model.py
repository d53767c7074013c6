"""RPMem's modules on a frozen TinyLM base: a compiler (session -> fixed-shape latent),
a recurrent merge gate (old memory, new latent -> new memory of the same size) and a
hypernetwork decoder (memory -> a rank-r LoRA on the base). Pure torch: no I/O.

Shapes: latent and memory are (B, d_mem); a LoRA is A (B, d_model, r), B (B, r, d_model).

Deviations from the paper, for a CPU-sized instance:

- The LoRA adapts the base's final hidden state (h + h A B, before the tied unembedding),
  not every projection: one adapted site is enough for key -> value recall here.
- The compiler is a GRU over the session's tokens, not the base LM: so the encoder is
  base-independent, which is what lets a base swap reuse it (the paper's setup).
- Bases are frozen seeded TinyLMs (the suite's student and teacher widths); the base
  reads a question's prompt only, so its last hidden state per question is computed
  once (`question_states`).
- The gate is GRU-like: keep = σ(W_k[m; z]), write = σ(W_w[m; z]),
  m' = keep ⊙ m + write ⊙ tanh(W_c[m; z])."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM
from suites.arith.tokenizer import Tokenizer, right_pad
from tasks.loops.rpmem.sessions import ANSWERS, question

BASES = {"student": 32, "teacher": 48}
"""The two frozen bases: name -> width (one layer, two heads, seeded init)."""


def frozen_base(name: str, seed: int) -> TinyLM:
    """The base `name`, seeded by `seed` without touching the global RNG; requires_grad off."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        base = TinyLM(TinyLMConfig(vocab_size=Tokenizer().vocab_size, d_model=BASES[name], n_layers=1,
                                   n_heads=2, max_len=16))
    for p in base.parameters():
        p.requires_grad_(False)
    return base.eval()


@torch.no_grad()
def question_states(base: TinyLM, keys: str) -> Tensor:
    """The base's final hidden state after reading each key's question: (K, d_model)."""
    tok = Tokenizer()
    tokens, mask = right_pad([tok.encode_prompt(question(k)) for k in keys])  # same length: no pad
    return base.hidden(tokens, mask)[:, -1]


def answer_ids() -> Tensor:
    """Token ids of the answers (digits and ``n``), in `ANSWERS` order: (A,)."""
    tok = Tokenizer()
    return torch.tensor([tok.encode(a)[0] for a in ANSWERS])


class Compiler(nn.Module):
    """Session tokens (B, T) with mask (B, T) -> latent (B, d_mem), forward only at write time."""

    def __init__(self, d_mem: int, d_embed: int = 32):
        super().__init__()
        self.embed = nn.Embedding(Tokenizer().vocab_size, d_embed)
        self.rnn = nn.GRU(d_embed, d_mem, batch_first=True)
        self.out = nn.Linear(d_mem, d_mem)

    def forward(self, tokens: Tensor, mask: Tensor) -> Tensor:
        lengths = mask.long().sum(-1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths, batch_first=True, enforce_sorted=False)
        _, h = self.rnn(packed)  # h (1, B, d_mem)
        return torch.tanh(self.out(h[0]))


class MergeGate(nn.Module):
    """(memory (B, d_mem), latent (B, d_mem)) -> (new memory, keep, write), each (B, d_mem)."""

    def __init__(self, d_mem: int):
        super().__init__()
        self.keep = nn.Linear(2 * d_mem, d_mem)
        self.write = nn.Linear(2 * d_mem, d_mem)
        self.cand = nn.Linear(2 * d_mem, d_mem)
        with torch.no_grad():  # start by writing (a squashed copy of) the latent
            self.cand.weight.zero_()
            self.cand.weight[:, d_mem:] = torch.eye(d_mem)
            self.cand.bias.zero_()

    def forward(self, memory: Tensor, latent: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        both = torch.cat([memory, latent], dim=-1)
        keep, write = torch.sigmoid(self.keep(both)), torch.sigmoid(self.write(both))
        return keep * memory + write * torch.tanh(self.cand(both)), keep, write


class Decoder(nn.Module):
    """Memory (B, d_mem) -> LoRA factors A (B, d_model, r), B (B, r, d_model); B starts at 0
    (the usual LoRA init), so an untrained decoder leaves the base unchanged."""

    def __init__(self, d_mem: int, d_model: int, rank: int):
        super().__init__()
        self.d_model, self.rank = d_model, rank
        self.a = nn.Linear(d_mem, d_model * rank)
        self.b = nn.Linear(d_mem, rank * d_model)
        nn.init.zeros_(self.b.weight)
        nn.init.zeros_(self.b.bias)

    def forward(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        n = memory.shape[0]
        return self.a(memory).view(n, self.d_model, self.rank), self.b(memory).view(n, self.rank, self.d_model)


class RPMem(nn.Module):
    """Compiler + gate (shared across bases) and one decoder for the current base."""

    def __init__(self, d_mem: int, d_model: int, rank: int):
        super().__init__()
        self.d_mem = d_mem
        self.compiler, self.gate, self.decoder = Compiler(d_mem), MergeGate(d_mem), Decoder(d_mem, d_model, rank)

    def empty(self, n: int) -> Tensor:
        return torch.zeros(n, self.d_mem)


def answer_logits(base: TinyLM, states: Tensor, lora: tuple[Tensor, Tensor]) -> Tensor:
    """Logits over `ANSWERS` of every question under each row's LoRA: (B, K, A).
    states (K, d_model): the base's hidden after each question; h' = h + h A B."""
    a, b = lora
    h = states[None].expand(a.shape[0], -1, -1)  # (B, K, d)
    adapted = h + torch.bmm(torch.bmm(h, a), b)  # (B, K, d)
    return adapted @ base.tok.weight[answer_ids()].T  # (B, K, A), tied unembedding


def encode_sessions(texts: Sequence[str]) -> tuple[Tensor, Tensor]:
    """Session texts -> (tokens, mask), each (B, T), right-padded."""
    tok = Tokenizer()
    return right_pad([tok.encode(t) for t in texts])
