"""GRPO on the arith suite's tiny LMs, as pure functions of their arguments (no store,
no Prefect): the stage tasks of `tasks.training.stages` wrap them.

One optimizer step (`train_step`):

    draw G train prompts (seeded by run seed and step)
    sample n rollouts per prompt from the current policy (seeded generator)
    verify each completion (exact match) -> outcome; reward = outcome or shaped
    advantages per group: GRPO (r - mean) / std, or Dr. GRPO r - mean
    optional group filter (Phantom Advantages): degenerate groups leave the loss
    optional GRPODropout: drop high-probability positive rollouts, re-centre the rest
    clipped policy loss on the generated tokens, one AdamW step (grad norm clipped at 1)

The rollouts are sampled by the policy being updated and each batch is used for one
step, so the ratio is 1 at the update; the clip only matters if steps are ever reused.
The device is chosen here (`device()`), never in the kernels."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from kernels.advantages import dr_grpo_advantages, filter_groups, grpo_advantages
from kernels.configs import GRPODropoutConfig, PolicyLossConfig
from kernels.grpo_dropout import grpo_dropout
from kernels.model import TinyLM, sample
from kernels.policy_loss import policy_loss
from kernels.reduce import token_mean
from kernels.types import LossOutputs, PolicyInputs
from schemas.ids import seed_for
from schemas.post_training import GRPOConfig
from suites.arith import Arith
from suites.arith.lm import complete, from_bytes, to_bytes
from suites.arith.teacher import STUDENT_MODEL, TeacherConfig, train_teacher
from suites.arith.tokenizer import EOS
from suites.base import Case

GREEDY = 1e-4
"""Evaluation temperature (as `suites.arith.lm.GREEDY`), with a fixed generator so two
evaluations of the same weights give the same outputs even at near-ties."""


CPU_THREADS = 1
"""Intra-op threads of CPU training and evaluation. Fixed, so a seed gives the same
weights (and candidate ids) on any machine: a TinyLM warm start on 2 threads gave other
weights than on 1, and on 2 shared cores it ran 6-11x slower (3.7-4.9 s vs 24-56 s CPU
for 60 steps, measured here)."""


def pin_cpu_threads() -> None:
    """Train and evaluate on CPU_THREADS intra-op threads (see there)."""
    if torch.get_num_threads() != CPU_THREADS:
        torch.set_num_threads(CPU_THREADS)


def device() -> torch.device:
    """The current CUDA device when present (`cuda:0` on a worker given one GPU), else CPU
    (with its threads pinned); indexed, so that `str(device())` names the device a
    `train_steps` row ran on."""
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    pin_cpu_threads()
    return torch.device("cpu")


@dataclass(frozen=True)
class Batch:
    """A step's rollouts: G groups of n, rows ordered group by group."""

    tokens: Tensor  # (B, P + N) left-padded prompt, then the generation
    mask: Tensor  # (B, P + N) real tokens
    prompt_len: int  # P
    old_logprobs: Tensor  # (B, N) sampling policy's log-probs of the generated tokens
    gen_mask: Tensor  # (B, N) generated tokens up to and including eos
    outcomes: Tensor  # (G, n) exact match 0/1
    rewards: Tensor  # (G, n) the reward the advantages read


@dataclass(frozen=True)
class StepResult:
    loss: float
    metrics: dict[str, float]
    tokens: int
    samples: int
    wall_s: float


def pretrain(categories: Sequence[str], steps: int, seed: int) -> TinyLM:
    """A student-sized TinyLM after `steps` supervised steps on plain train prompts of
    `categories` (deterministic in `seed`), in eval mode on CPU."""
    pin_cpu_threads()
    sft = TeacherConfig(model=STUDENT_MODEL, categories=tuple(categories), context_prob=0.0, write_prob=0.0,
                        episode_prob=0.0, eval_per_category=0, eval_writes=0)
    model, _ = train_teacher(sft, steps, seed)
    return model


def make_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.0)


def to_cpu(value):
    if isinstance(value, Tensor):
        return value.detach().cpu()
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    return value


def save_checkpoint(model: TinyLM, optimizer: torch.optim.Optimizer | None, step: int) -> bytes:
    """`suites.arith.lm.to_bytes` with the optimizer state and the step count in its meta,
    so `from_bytes` reads the weights and `load_checkpoint` resumes the optimizer too."""
    meta = {"step": step, "optimizer": None if optimizer is None else to_cpu(optimizer.state_dict())}
    return to_bytes(model, meta)


def load_policy(data: bytes, on: torch.device) -> TinyLM:
    """The model of a checkpoint on `on`, without its optimizer (to evaluate it)."""
    return from_bytes(data)[0].to(on)


def load_checkpoint(data: bytes, lr: float, on: torch.device) -> tuple[TinyLM, torch.optim.Optimizer, int]:
    """Inverse of `save_checkpoint` -> (model on `on`, its AdamW, steps done); a fresh
    optimizer when the checkpoint has none (the warm-started policy)."""
    model, meta = from_bytes(data)
    model.to(on)
    optimizer = make_optimizer(model, lr)
    if meta.get("optimizer") is not None:
        optimizer.load_state_dict(meta["optimizer"])
    return model, optimizer, int(meta.get("step", 0))


def draw_prompts(train: Sequence[Case], n: int, seed: int, step: int) -> list[Case]:
    """`n` distinct train cases (with repeats only if the pool is smaller), seeded by (seed, step)."""
    rng = random.Random(seed_for(seed, "grpo-prompts", step))
    return rng.sample(list(train), n) if n <= len(train) else [rng.choice(train) for _ in range(n)]


def collect(model: nn.Module, suite: Arith, cases: Sequence[Case], cfg: GRPOConfig, generator: torch.Generator) -> Batch:
    """Sample `cfg.group_size` rollouts per case and verify them."""
    on = next(model.parameters()).device
    repeated = [c for c in cases for _ in range(cfg.group_size)]
    prompts, prompt_mask = suite.encode_prompts(repeated)
    prompts, prompt_mask = prompts.to(on), prompt_mask.to(on)
    rollout = sample(model, prompts, cfg.max_new_tokens, cfg.temperature, generator, prompt_mask, EOS)
    P = prompts.shape[1]
    outputs = suite.decode(rollout.tokens[:, P:].cpu())
    lengths = rollout.mask.sum(-1).tolist()
    outcomes, shaped = suite.rewards(repeated, outputs, lengths, cfg.length_coef, cfg.max_new_tokens)
    rewards = shaped if cfg.reward == "shaped" else outcomes
    G = len(cases)
    return Batch(rollout.tokens, torch.cat([prompt_mask, rollout.mask], 1), P, rollout.logprobs, rollout.mask,
                 outcomes.view(G, -1).to(on), rewards.view(G, -1).to(on))


def group_advantages(batch: Batch, cfg: GRPOConfig) -> tuple[Tensor, Tensor]:
    """(advantages (B, 1), kept groups (G,)): the configured estimator, zeroed on the
    groups the filter drops."""
    estimator = grpo_advantages if cfg.advantage == "grpo" else dr_grpo_advantages
    adv = estimator(batch.rewards)  # (G, n)
    if cfg.group_filter == "none":
        kept = torch.ones(adv.shape[0], dtype=torch.bool, device=adv.device)
    else:
        kept = filter_groups(batch.outcomes, batch.rewards, cfg.group_filter)
    return (adv * kept[:, None]).reshape(-1, 1), kept


def drop_rollouts(batch: Batch, advantages: Tensor, cfg: GRPOConfig) -> tuple[Tensor, Tensor]:
    """GRPODropout on the group advantages (B, 1) -> (re-centred advantages (B, 1), kept
    rows (B,)); without `cfg.dropout` every row is kept and nothing changes. Filtered
    groups arrive all-zero and stay all-zero (nothing positive to drop)."""
    keep_all = torch.ones(advantages.shape[0], dtype=torch.bool, device=advantages.device)
    if not cfg.dropout:
        return advantages, keep_all
    G, n = batch.rewards.shape
    seq_logprobs = (batch.old_logprobs * batch.gen_mask).sum(-1).view(G, n)  # log pi_old(y_i)
    selection = grpo_dropout(advantages.view(G, n), seq_logprobs,
                             GRPODropoutConfig(n_drop=cfg.dropout_n_drop, min_effect=cfg.dropout_min_effect))
    return selection.advantages.reshape(-1, 1), selection.kept.reshape(-1)


def loss_config(cfg: GRPOConfig) -> PolicyLossConfig:
    """GRPO: per-sequence mean (the paper); Dr. GRPO: token sum / (B * max_new_tokens)."""
    aggregation = "seq_mean" if cfg.advantage == "grpo" else "seq_sum_constant"
    return PolicyLossConfig(clip_low=cfg.clip, clip_high=cfg.clip, aggregation=aggregation, norm_tokens=cfg.max_new_tokens)


def policy_logprobs(model: nn.Module, batch: Batch, temperature: float) -> tuple[Tensor, Tensor]:
    """(log-probs (B, N) of the generated tokens under `model` at the sampling
    temperature, with grad; per-token entropy (B, N), detached)."""
    P = batch.prompt_len
    logits = model(batch.tokens, batch.mask)[:, P - 1 : -1] / temperature  # (B, N, V)
    logp = torch.log_softmax(logits.float(), dim=-1)
    lp = logp.gather(-1, batch.tokens[:, P:, None]).squeeze(-1)  # (B, N)
    with torch.no_grad():
        entropy = -(logp.exp() * logp).sum(-1)  # (B, N)
    return lp, entropy


def grpo_loss(model: nn.Module, batch: Batch, advantages: Tensor, loss_mask: Tensor, cfg: GRPOConfig) -> LossOutputs:
    """Clipped policy loss of the generated tokens under the current policy (same
    temperature as the sampling), with the mean entropy of all generated tokens as a metric."""
    lp, entropy = policy_logprobs(model, batch, cfg.temperature)
    out = policy_loss(PolicyInputs(lp, batch.old_logprobs, advantages, loss_mask), loss_config(cfg))
    out.metrics["entropy"] = token_mean(entropy, batch.gen_mask)  # over every generated token, kept or not
    return out


def policy_update(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Batch, cfg: GRPOConfig) -> tuple[float, dict[str, float]]:
    """Advantages, filter, dropout, loss and one optimizer step on `batch` -> (loss, metrics).
    With no group kept there is no step (AdamW would still move on its momentum)."""
    advantages, kept = group_advantages(batch, cfg)
    advantages, used = drop_rollouts(batch, advantages, cfg)
    rows = kept.repeat_interleave(batch.rewards.shape[1]) & used  # (B,) rows that carry loss
    loss_mask = batch.gen_mask.bool() & rows[:, None]
    out = grpo_loss(model, batch, advantages, loss_mask, cfg)
    optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    grad_norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if bool(loss_mask.any()):
        optimizer.step()
    metrics = {k: float(v) for k, v in out.metrics.items()}
    metrics.update(
        reward_mean=float(batch.rewards.mean()), accuracy=float(batch.outcomes.mean()),
        kept_groups=float(kept.float().mean()), dropped_frac=float(1.0 - used.float().mean()),
        kept_all_fail=float((kept & (batch.outcomes.amax(-1) == 0)).sum() / kept.sum().clamp(min=1)),
        grad_norm=float(grad_norm),
        length_mean=float(batch.gen_mask.sum(-1).float().mean()),
    )
    return float(out.loss.detach()), metrics


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, suite: Arith, train: Sequence[Case],
               cfg: GRPOConfig, seed: int, step: int) -> StepResult:
    """One GRPO step (see the module docstring); deterministic in (weights, seed, step) on CPU."""
    start = time.perf_counter()
    on = next(model.parameters()).device
    generator = torch.Generator(device=on).manual_seed(seed_for(seed, "grpo-rollouts", step))
    batch = collect(model, suite, draw_prompts(train, cfg.prompts_per_step, seed, step), cfg, generator)
    loss, metrics = policy_update(model, optimizer, batch, cfg)
    return StepResult(loss, metrics, int(batch.gen_mask.sum()), int(batch.gen_mask.shape[0]), time.perf_counter() - start)


def greedy_outputs(model: nn.Module, suite: Arith, cases: Sequence[Case]) -> list[str]:
    """Near-greedy completions of the cases' plain prompts, reproducible for fixed weights."""
    on = next(model.parameters()).device
    prompts = [suite.tokenizer.encode_prompt(c.payload["prompt"]) for c in cases]
    generator = torch.Generator(device=on).manual_seed(0)
    return complete(model, suite.tokenizer, prompts, suite.max_new_tokens, GREEDY, generator)
