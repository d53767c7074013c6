"""PPO and PACT actor-critic steps on the arith suite's tiny LMs, as pure functions of
their arguments (no store, no Prefect): the stage tasks of `tasks.loops.ppo_pact.critic_train` wrap them.

One optimizer step (`actor_critic_step`):

    draw prompts; sample `group_size` rollouts each from the actor; exact-match outcome R
    critic values V_t of every generated token (before any update)
    GAE with gamma = lambda = 1: A_t = R - V_t, return R
    actor: clipped policy loss on A_t, one AdamW step (none in the first
           `critic_warmup_steps` steps: the critic is pre-trained on the warm start)
    critic, ppo:  clipped value MSE toward R (V is the head's raw output)
    critic, pact: re-forward the UPDATED actor on the same rollouts, ratio rho_t =
                  pi_new / pi_old of each token; BCE of sigmoid(logit) toward R weighted by
                  rho_t, tokens with rho_t outside [ratio_low, ratio_high] masked

Departs from the papers: one actor step per batch (no PPO epochs), so the PACT ratio is
that one step's; the critic is a second TinyLM trunk initialised from the warm-started
actor with a zero head (V = 0 for ppo, 0.5 for pact) rather than a pretrained critic;
advantages are not whitened. Calibration (`critic_mc_error`) is the mean absolute gap
between the critic's value of each prompt (first generated position) and the group's
mean outcome, a Monte-Carlo estimate of that prompt's value under the sampling actor,
which is the actor the previous step's critic update aimed at."""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from kernels.advantages import gae
from kernels.configs import PACTConfig, PolicyLossConfig, TinyLMConfig, ValueLossConfig
from kernels.critic import pact_critic_loss, ppo_value_loss
from kernels.model import TinyCritic, TinyLM, sample
from kernels.policy_loss import policy_loss
from kernels.reduce import token_mean
from kernels.types import LossOutputs, PACTInputs, PolicyInputs, ValueInputs
from schemas.ids import seed_for
from schemas.post_training import PPOPACTConfig
from suites.arith import Arith
from suites.arith.tokenizer import EOS
from suites.base import Case
from tasks.training.policy import Batch, StepResult, draw_prompts, make_optimizer, policy_logprobs, to_cpu


def make_critic(actor: TinyLM) -> TinyCritic:
    """A critic whose trunk is a copy of `actor` and whose head is zero (constant logit 0)."""
    critic = TinyCritic(actor.cfg)
    critic.trunk.load_state_dict(actor.state_dict())
    nn.init.zeros_(critic.head.weight)
    nn.init.zeros_(critic.head.bias)
    return critic.to(next(actor.parameters()).device)


def save_critic(critic: TinyCritic, optimizer: torch.optim.Optimizer | None, step: int) -> bytes:
    """The critic's shape, weights, optimizer state and step count as torch.save bytes."""
    buffer = io.BytesIO()
    state = {k: v.detach().cpu() for k, v in critic.state_dict().items()}
    opt = None if optimizer is None else to_cpu(optimizer.state_dict())
    torch.save({"config": critic.trunk.cfg.model_dump(), "state_dict": state, "optimizer": opt, "step": step}, buffer)
    return buffer.getvalue()


def load_critic(data: bytes, lr: float, on: torch.device) -> tuple[TinyCritic, torch.optim.Optimizer, int]:
    """Inverse of `save_critic` -> (critic on `on`, its AdamW, steps done)."""
    blob = torch.load(io.BytesIO(data), weights_only=True)
    critic = TinyCritic(TinyLMConfig(**blob["config"]))
    critic.load_state_dict(blob["state_dict"])
    critic.to(on)
    optimizer = make_optimizer(critic, lr)
    if blob["optimizer"] is not None:
        optimizer.load_state_dict(blob["optimizer"])
    return critic, optimizer, int(blob["step"])


def rollouts(actor: nn.Module, suite: Arith, cases: Sequence[Case], cfg: PPOPACTConfig,
             generator: torch.Generator) -> Batch:
    """`cfg.group_size` rollouts per case from the actor, with exact-match outcomes."""
    on = next(actor.parameters()).device
    repeated = [c for c in cases for _ in range(cfg.group_size)]
    prompts, prompt_mask = suite.encode_prompts(repeated)
    rollout = sample(actor, prompts.to(on), cfg.max_new_tokens, cfg.temperature, generator, prompt_mask.to(on), EOS)
    P = prompts.shape[1]
    outputs = suite.decode(rollout.tokens[:, P:].cpu())
    outcomes = torch.tensor([v.metrics["correct"] for v in suite.score_outputs(repeated, outputs)], dtype=torch.float32)
    outcomes = outcomes.view(len(cases), -1).to(on)  # (G, n)
    mask = torch.cat([prompt_mask.to(on), rollout.mask], 1)
    return Batch(rollout.tokens, mask, P, rollout.logprobs, rollout.mask, outcomes, outcomes)


def terminal_rewards(outcomes: Tensor, gen_mask: Tensor) -> Tensor:
    """The outcome (B,) placed on each row's last generated token -> (B, N), 0 elsewhere."""
    last = (gen_mask.long().cumsum(-1) == gen_mask.sum(-1, keepdim=True)) & gen_mask.bool()  # (B, N)
    return last.to(outcomes.dtype) * outcomes[:, None]


def critic_logits(critic: TinyCritic, batch: Batch) -> Tensor:
    """Critic output at each generated token's state (the position that predicts it): (B, N)."""
    P = batch.prompt_len
    return critic(batch.tokens, batch.mask)[:, P - 1 : -1]


def as_value(logits: Tensor, cfg: PPOPACTConfig) -> Tensor:
    """The critic's value: the raw output (ppo regression) or sigmoid (pact probability)."""
    return torch.sigmoid(logits) if cfg.critic == "pact" else logits


def explained_variance(values: Tensor, returns: Tensor, mask: Tensor) -> float:
    """1 - Var(R - V) / Var(R) over valid tokens; NaN when the returns do not vary."""
    m = mask.bool()
    r, v = returns[m].double(), values[m].double()
    var = r.var(correction=0)
    return float("nan") if float(var) == 0.0 else float(1.0 - (r - v).var(correction=0) / var)


def actor_update(actor: nn.Module, optimizer: torch.optim.Optimizer, batch: Batch, advantages: Tensor,
                 cfg: PPOPACTConfig, update: bool) -> LossOutputs:
    """Clipped policy loss on per-token advantages (token mean); with `update`, one AdamW
    step (grad norm clipped at 1), else the loss is only measured (critic warm-up)."""
    lp, entropy = policy_logprobs(actor, batch, cfg.temperature)
    loss_cfg = PolicyLossConfig(clip_low=cfg.clip, clip_high=cfg.clip, aggregation="token_mean")
    out = policy_loss(PolicyInputs(lp, batch.old_logprobs, advantages, batch.gen_mask), loss_cfg)
    if update:
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        nn.utils.clip_grad_norm_(actor.parameters(), 1.0)
        optimizer.step()
    out.metrics["entropy"] = token_mean(entropy, batch.gen_mask)
    return out


def pact_loss(logits: Tensor, returns: Tensor, old_values: Tensor, new_logprobs: Tensor, batch: Batch,
              cfg: PPOPACTConfig) -> LossOutputs:
    """PACT: ratio-weighted BCE toward the return, out-of-range tokens masked."""
    kernel_cfg = PACTConfig(ratio_low=cfg.ratio_low, ratio_high=cfg.ratio_high,
                            importance_correction=cfg.importance_correction)
    return pact_critic_loss(PACTInputs(logits, returns, new_logprobs, batch.old_logprobs, batch.gen_mask), kernel_cfg)


def ppo_loss(logits: Tensor, returns: Tensor, old_values: Tensor, new_logprobs: Tensor, batch: Batch,
             cfg: PPOPACTConfig) -> LossOutputs:
    """PPO: clipped value MSE toward the return (the ratio is not used)."""
    return ppo_value_loss(ValueInputs(logits, old_values, returns, batch.gen_mask), ValueLossConfig(clip=cfg.value_clip))


CRITIC_LOSSES = {"ppo": ppo_loss, "pact": pact_loss}


def critic_update(critic: TinyCritic, optimizer: torch.optim.Optimizer, actor: nn.Module, batch: Batch,
                  returns: Tensor, old_values: Tensor, cfg: PPOPACTConfig) -> LossOutputs:
    """One critic step after the actor's: the updated actor re-scores the rollouts (the
    PACT ratio's numerator), then the configured critic loss and one AdamW step."""
    with torch.no_grad():
        new_logprobs, _ = policy_logprobs(actor, batch, cfg.temperature)
    out = CRITIC_LOSSES[cfg.critic](critic_logits(critic, batch), returns, old_values, new_logprobs, batch, cfg)
    optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    nn.utils.clip_grad_norm_(critic.parameters(), 1.0)
    optimizer.step()
    return out


@dataclass(frozen=True)
class Learner:
    """The actor and critic being trained, with their optimizers."""

    actor: TinyLM
    actor_optimizer: torch.optim.Optimizer
    critic: TinyCritic
    critic_optimizer: torch.optim.Optimizer


def actor_critic_step(learner: Learner, suite: Arith, train: Sequence[Case], cfg: PPOPACTConfig,
                      seed: int, step: int) -> StepResult:
    """One PPO or PACT step (see the module docstring); deterministic in (weights, seed, step) on CPU."""
    start = time.perf_counter()
    on = next(learner.actor.parameters()).device
    generator = torch.Generator(device=on).manual_seed(seed_for(seed, "ppo-pact-rollouts", step))
    batch = rollouts(learner.actor, suite, draw_prompts(train, cfg.prompts_per_step, seed, step), cfg, generator)
    with torch.no_grad():
        old_values = as_value(critic_logits(learner.critic, batch), cfg)  # (B, N)
    advantages, returns = gae(terminal_rewards(batch.outcomes.reshape(-1), batch.gen_mask), old_values, batch.gen_mask)
    warm = step < cfg.critic_warmup_steps  # the critic learns the warm start's values first
    actor_out = actor_update(learner.actor, learner.actor_optimizer, batch, advantages, cfg, update=not warm)
    critic_out = critic_update(learner.critic, learner.critic_optimizer, learner.actor, batch, returns, old_values, cfg)
    G, n = batch.outcomes.shape
    prompt_values = old_values[:, 0].view(G, n).mean(-1)  # (G,) value of each prompt
    metrics = {f"actor_{k}": float(v) for k, v in actor_out.metrics.items() if k != "entropy"}
    metrics.update({f"critic_{k}": float(v) for k, v in critic_out.metrics.items()})
    metrics.update(
        actor_loss=float(actor_out.loss.detach()), critic_loss=float(critic_out.loss.detach()),
        entropy=float(actor_out.metrics["entropy"]), accuracy=float(batch.outcomes.mean()),
        reward_mean=float(batch.outcomes.mean()), length_mean=float(batch.gen_mask.sum(-1).float().mean()),
        value_mean=float(token_mean(old_values, batch.gen_mask)),
        explained_variance=explained_variance(old_values, returns, batch.gen_mask),
        critic_mc_error=float((prompt_values - batch.outcomes.mean(-1)).abs().mean()),
        actor_updated=float(not warm),
    )
    tokens = int(batch.gen_mask.sum())
    return StepResult(metrics["actor_loss"], metrics, tokens, int(batch.gen_mask.shape[0]), time.perf_counter() - start)
