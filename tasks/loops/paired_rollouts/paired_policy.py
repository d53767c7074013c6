"""One GRPO step under injected verifier noise (Luck Is Not Skill), and its gradient
probe, as pure functions of their arguments (no store, no Prefect); `tasks.loops.paired_rollouts.paired`
wraps them. Sampling, advantages and the update are `tasks.training.policy`'s:

    draw G train prompts, sample n rollouts each, verify -> true outcomes
    noise schedule per group (`tasks.loops.paired_rollouts.noise`, shared or independent) -> observed rewards
    [probe] on this batch, before the update (see `gradient_probe`)
    GRPO (std-normalized) advantages and the update read the observed rewards only

The probe departs from the paper's, which measures 8 checkpoints: here it runs on the
training batch every `probe_every` steps, and measures BOTH pairings on the same batch
(a within-batch paired comparison) whatever arm the run trains with."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Sequence

import torch
from torch import Tensor, nn

from schemas.ids import seed_for
from schemas.post_training import GRPOConfig, PairedRolloutsConfig
from suites.arith import Arith
from suites.base import Case
from tasks.loops.paired_rollouts.noise import corrupt_batch
from tasks.training.policy import Batch, StepResult, collect, draw_prompts, group_advantages, grpo_loss, policy_update


def policy_gradient(model: nn.Module, batch: Batch, rewards: Tensor, cfg: GRPOConfig) -> Tensor:
    """The flattened gradient of the GRPO loss of `batch` when it reads `rewards` (G, n);
    zeros when every group is degenerate (no advantage, no gradient)."""
    params = [p for p in model.parameters() if p.requires_grad]
    scored = replace(batch, outcomes=rewards, rewards=rewards)
    advantages, kept = group_advantages(scored, cfg)
    loss_mask = scored.gen_mask.bool() & kept.repeat_interleave(rewards.shape[1])[:, None]
    if not bool(loss_mask.any()) or not bool(advantages.ne(0).any()):
        return torch.zeros(sum(p.numel() for p in params), device=rewards.device)
    loss = grpo_loss(model, scored, advantages, loss_mask, cfg).loss
    grads = torch.autograd.grad(loss, params, allow_unused=True)
    return torch.cat([(torch.zeros_like(p) if g is None else g).flatten() for p, g in zip(params, grads)])


def covariance_trace(gradients: Tensor) -> float:
    """Mean-centred covariance trace of K gradient draws (K, D): mean_k ||g_k - mean||^2."""
    return float((gradients - gradients.mean(0)).pow(2).sum(-1).mean())


def mean_cosine(vectors: Tensor, reference: Tensor) -> float:
    """Mean cosine of each row with `reference` (0 for a zero vector)."""
    norms = vectors.norm(dim=-1) * reference.norm()
    cosines = torch.where(norms > 0, vectors @ reference / norms.clamp_min(1e-30), torch.zeros_like(norms))
    return float(cosines.mean())


def gradient_probe(model: nn.Module, batch: Batch, outputs: Sequence[Sequence[str]], case_ids: Sequence[str],
                   cfg: GRPOConfig, noise: PairedRolloutsConfig, seed: int, step: int) -> dict[str, float]:
    """For each pairing: the gradient under K fresh noise schedules of this batch ->
    `probe_cov_<pairing>` (mean-centred covariance trace, the paper's measure) and
    `probe_cos_<pairing>` (mean cosine of the noise-induced component g_k - g_true with
    the true-reward gradient g_true); `probe_true_norm` is ||g_true||."""
    true_outcomes = batch.outcomes.tolist()
    g_true = policy_gradient(model, batch, batch.outcomes, cfg)
    metrics = {"probe_true_norm": float(g_true.norm())}
    for pairing in ("shared", "independent"):
        arm = noise.model_copy(update={"noise_pairing": pairing})
        draws = []
        for k in range(noise.probe_schedules):
            observed, _ = corrupt_batch(true_outcomes, outputs, case_ids, arm, seed, step, f"probe{k}")
            rewards = torch.tensor(observed, dtype=batch.outcomes.dtype, device=batch.outcomes.device)
            draws.append(policy_gradient(model, batch, rewards, cfg))
        gradients = torch.stack(draws)
        metrics[f"probe_cov_{pairing}"] = covariance_trace(gradients)
        metrics[f"probe_cos_{pairing}"] = mean_cosine(gradients - g_true, g_true)
    return metrics


def paired_step(model: nn.Module, optimizer: torch.optim.Optimizer, suite: Arith, train: Sequence[Case],
                cfg: GRPOConfig, noise: PairedRolloutsConfig, seed: int, step: int) -> StepResult:
    """One noisy GRPO step (see the module docstring); deterministic in (weights, seed,
    step) on CPU. Metrics add the true and observed reward means, the fraction of
    rollouts hit by noise and, on probe steps, `gradient_probe`'s values."""
    start = time.perf_counter()
    on = next(model.parameters()).device
    generator = torch.Generator(device=on).manual_seed(seed_for(seed, "grpo-rollouts", step))
    cases = draw_prompts(train, cfg.prompts_per_step, seed, step)
    batch = collect(model, suite, cases, cfg, generator)
    n = cfg.group_size
    texts = suite.decode(batch.tokens[:, batch.prompt_len :].cpu())
    outputs = [texts[g * n : (g + 1) * n] for g in range(len(cases))]
    case_ids = [c.case_id for c in cases]
    observed, hits = corrupt_batch(batch.outcomes.tolist(), outputs, case_ids, noise, seed, step, "train")
    probe = {}
    if step % noise.probe_every == 0:  # before the update, on the weights that sampled the batch
        probe = gradient_probe(model, batch, outputs, case_ids, cfg, noise, seed, step)
    rewards = torch.tensor(observed, dtype=batch.outcomes.dtype, device=on)
    loss, metrics = policy_update(model, optimizer, replace(batch, outcomes=rewards, rewards=rewards), cfg)
    hit_rows = [h > 0 for group in hits for h in group]
    metrics.update(probe, accuracy=float(batch.outcomes.mean()), reward_true_mean=float(batch.outcomes.mean()),
                   reward_obs_mean=float(rewards.mean()), noise_hit_frac=sum(hit_rows) / len(hit_rows))
    wall_s = time.perf_counter() - start
    return StepResult(loss, metrics, int(batch.gen_mask.sum()), int(batch.gen_mask.shape[0]), wall_s)
