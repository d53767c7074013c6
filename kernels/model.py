"""A tiny decoder-only transformer (pre-norm, learned positions, tied embeddings), a
sigmoid critic on the same trunk, the next-token log-prob gather and batched sampling.

Padding: `mask` (B, T) marks real tokens. Prompts may be left-padded; positions count
real tokens only and no query attends to a pad key, so a left-padded row scores exactly
like the unpadded one. Sampling re-runs the full prefix each step (no KV cache): fine at
these sizes, quadratic in length. Everything runs on the model's device."""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from kernels.configs import TinyLMConfig
from kernels.types import Rollout


class Block(nn.Module):
    def __init__(self, cfg: TinyLMConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(), nn.Linear(4 * cfg.d_model, cfg.d_model)
        )

    def forward(self, x: Tensor, attn_mask: Tensor) -> Tensor:
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, D // self.n_heads).transpose(1, 2) for t in (q, k, v))  # (B, H, T, d)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # (B, H, T, d)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    """forward(tokens (B, T), mask (B, T) or None) -> logits (B, T, vocab)."""

    def __init__(self, cfg: TinyLMConfig):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Embedding(cfg.max_len, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        for emb in (self.tok, self.pos):
            nn.init.normal_(emb.weight, std=0.02)  # GPT-2 init: near-uniform next-token distribution at start

    def hidden(self, tokens: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        """Final hidden states (B, T, d_model)."""
        B, T = tokens.shape
        if T > self.cfg.max_len:
            raise ValueError(f"sequence length {T} exceeds max_len={self.cfg.max_len}; raise max_len in TinyLMConfig")
        mask = torch.ones_like(tokens, dtype=torch.bool) if mask is None else mask.bool()
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)  # (B, T)
        causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()  # (T, T)
        eye = torch.eye(T, dtype=torch.bool, device=tokens.device)
        attn = (causal & mask[:, None, :]) | eye  # (B, T, T); pad queries see themselves, never NaN
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x, attn[:, None])
        return self.ln_f(x)

    def forward(self, tokens: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        return self.hidden(tokens, mask) @ self.tok.weight.T  # (B, T, V), tied embeddings


class TinyCritic(nn.Module):
    """A TinyLM trunk with a scalar head: forward -> value logits (B, T); sigmoid = success probability."""

    def __init__(self, cfg: TinyLMConfig):
        super().__init__()
        self.trunk = TinyLM(cfg)
        self.head = nn.Linear(cfg.d_model, 1)

    def forward(self, tokens: Tensor, mask: Optional[Tensor] = None) -> Tensor:
        return self.head(self.trunk.hidden(tokens, mask)).squeeze(-1)


def _at_least_fp32(x: Tensor) -> torch.dtype:
    return torch.promote_types(x.dtype, torch.float32)


def token_logprobs(model: nn.Module, tokens: Tensor, mask: Optional[Tensor] = None, temperature: float = 1.0) -> Tensor:
    """Log-prob of each next token given its prefix: (B, T-1), position t scores tokens[:, t+1].
    Zero where mask[:, 1:] is False. `temperature` divides the logits, matching `sample`."""
    logits = model(tokens, mask)[:, :-1] / temperature  # (B, T-1, V)
    lp = torch.log_softmax(logits, dim=-1, dtype=_at_least_fp32(logits)).gather(-1, tokens[:, 1:, None]).squeeze(-1)  # (B, T-1)
    return lp if mask is None else lp * mask[:, 1:].to(lp.dtype)


@torch.no_grad()
def sample(
    model: nn.Module,
    prompts: Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: Optional[torch.Generator] = None,
    prompt_mask: Optional[Tensor] = None,
    eos_id: Optional[int] = None,
) -> Rollout:
    """Sample `max_new_tokens` tokens per row from softmax(logits / temperature).
    prompts (B, P), left-padded where `prompt_mask` (B, P) is False. After a row emits
    `eos_id`, it is filled with eos, its mask is False and its log-probs are 0. The
    generator (on the model's device) makes the draw reproducible."""
    device = next(model.parameters()).device
    tokens = prompts.to(device)
    mask = torch.ones_like(tokens, dtype=torch.bool) if prompt_mask is None else prompt_mask.to(device).bool()
    alive = torch.ones(tokens.shape[0], dtype=torch.bool, device=device)  # (B,)
    stop_id = -1 if eos_id is None else eos_id  # -1 is never sampled: rows stay alive
    logprobs, gen_mask = [], []
    for _ in range(max_new_tokens):
        logits = model(tokens, mask)[:, -1] / temperature  # (B, V)
        logp = torch.log_softmax(logits, dim=-1, dtype=_at_least_fp32(logits))
        nxt = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)  # (B,)
        nxt = torch.where(alive, nxt, torch.full_like(nxt, stop_id))
        logprobs.append(torch.where(alive, logp.gather(-1, nxt[:, None]).squeeze(-1), torch.zeros_like(logp[:, 0])))
        gen_mask.append(alive)
        alive = alive & (nxt != stop_id)
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        mask = torch.cat([mask, torch.ones_like(nxt[:, None], dtype=torch.bool)], dim=1)
    return Rollout(tokens, torch.stack(logprobs, 1), torch.stack(gen_mask, 1))
