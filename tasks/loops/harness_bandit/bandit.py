"""HarnessBandit's per-step harness scheduler and one multi-harness GRPO step, as pure
functions of their arguments (no store, no Prefect); `tasks.loops.harness_bandit.bandit_train` wraps them.

Each step trains in exactly one harness (here: an arith category, a task format the
shared policy must serve):

    probabilities: floor / H + (1 - floor) * softmax((score_h + bonus_h) / temperature)
        score_h   the fused signal of harness h at its last visit (1, optimistic, if never visited)
        bonus_h   c * sqrt(ln(t + 1) / (visits_h + 1))
    draw harness h (seeded by run seed and step); uniform and round_robin replace this draw
    GRPO step on G prompts of h (tasks.training.policy)
    learnability  = batch mean |advantage|
    sketch        = a fixed random projection of the output layer's gradient
    transferability = cos(sketch, sum of the OTHER harnesses' sketch EMAs) (0 before any)
    both min-max normalized over a window of recent steps; fused = w * learn + (1 - w) * transfer

The spec leaves window, weights, bonus form, floor, sketch size and EMA rate open: they
are `HarnessBanditConfig` fields. The output layer is the tied token embedding. The
signals are computed under every scheduler, so the baselines record them too."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import torch
from torch import nn

from schemas.ids import seed_for
from schemas.post_training import GRPOConfig, HarnessBanditConfig
from suites.arith import Arith
from suites.base import Case
from tasks.training.policy import StepResult, collect, draw_prompts, group_advantages, policy_update


@dataclass
class SchedulerState:
    """What persists between steps: visits, last fused score and sketch EMA per harness,
    and the window of recent (learnability, transferability) pairs. JSON-able via `to_meta`."""

    visits: list[int]
    scores: list[Optional[float]]
    emas: list[Optional[list[float]]]
    window: list[list[float]] = field(default_factory=list)

    @classmethod
    def fresh(cls, harnesses: int) -> "SchedulerState":
        return cls([0] * harnesses, [None] * harnesses, [None] * harnesses)

    def to_meta(self) -> dict:
        return {"visits": self.visits, "scores": self.scores, "emas": self.emas, "window": self.window}

    @classmethod
    def from_meta(cls, meta: dict) -> "SchedulerState":
        return cls(list(meta["visits"]), list(meta["scores"]), list(meta["emas"]), [list(w) for w in meta["window"]])


def harness_probs(state: SchedulerState, hb: HarnessBanditConfig, step: int) -> tuple[list[float], list[float]]:
    """(sampling probabilities, visit bonuses) of the harnesses at `step` under the bandit."""
    H = len(state.visits)
    bonus = [hb.bonus * math.sqrt(math.log(step + 1) / (v + 1)) for v in state.visits]
    values = [(1.0 if s is None else s) + b for s, b in zip(state.scores, bonus)]
    top = max(values)
    weights = [math.exp((v - top) / hb.temperature) for v in values]
    total = sum(weights)
    return [hb.floor / H + (1 - hb.floor) * w / total for w in weights], bonus


def choose_harness(state: SchedulerState, hb: HarnessBanditConfig, seed: int,
                   step: int) -> tuple[int, list[float], list[float]]:
    """(harness index, probabilities, bonuses) of this step under `hb.scheduler`."""
    H = len(state.visits)
    rng = random.Random(seed_for(seed, "harness", step))
    if hb.scheduler == "round_robin":
        index = step % H
        return index, [float(h == index) for h in range(H)], [0.0] * H
    if hb.scheduler == "uniform":
        return rng.randrange(H), [1.0 / H] * H, [0.0] * H
    probs, bonus = harness_probs(state, hb, step)
    return rng.choices(range(H), weights=probs)[0], probs, bonus


def minmax(value: float, values: Sequence[float]) -> float:
    """`value` scaled to [0, 1] by the min and max of `values` (0.5 when they are equal)."""
    low, high = min(values), max(values)
    return 0.5 if high - low < 1e-12 else (value - low) / (high - low)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot, na, nb = sum(x * y for x, y in zip(a, b)), math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return 0.0 if na == 0 or nb == 0 else dot / (na * nb)


def transferability(state: SchedulerState, harness: int, sketch: Sequence[float]) -> float:
    """Cosine of this step's sketch with the sum of the other harnesses' EMAs (0 before any)."""
    others = [e for h, e in enumerate(state.emas) if h != harness and e is not None]
    if not others:
        return 0.0
    return cosine(sketch, [sum(column) for column in zip(*others)])


def record(state: SchedulerState, hb: HarnessBanditConfig, harness: int, sketch: Sequence[float],
           learn_raw: float, transfer_raw: float) -> dict[str, float]:
    """Push this step's signals into the window, fuse them, and update the harness's
    visits, score and EMA in place -> the normalized and fused signals."""
    state.window = (state.window + [[learn_raw, transfer_raw]])[-hb.window :]
    learn_n = minmax(learn_raw, [w[0] for w in state.window])
    transfer_n = minmax(transfer_raw, [w[1] for w in state.window])
    fused = hb.learn_weight * learn_n + (1 - hb.learn_weight) * transfer_n
    ema = state.emas[harness]
    state.emas[harness] = list(sketch) if ema is None else [
        (1 - hb.ema_rate) * e + hb.ema_rate * s for e, s in zip(ema, sketch)]
    state.visits[harness] += 1
    state.scores[harness] = fused
    return {"learn_n": learn_n, "transfer_n": transfer_n, "fused": fused}


def gradient_sketch(model: nn.Module, dim: int, seed: int) -> list[float]:
    """A fixed (seeded) Gaussian projection of the output layer's current gradient."""
    grad = model.tok.weight.grad
    flat = torch.zeros(model.tok.weight.numel()) if grad is None else grad.detach().flatten().cpu().float()
    generator = torch.Generator().manual_seed(seed_for(seed, "grad-sketch"))
    projection = torch.randn(dim, flat.numel(), generator=generator) / math.sqrt(dim)
    return (projection @ flat).tolist()


def learnability(batch, cfg: GRPOConfig) -> float:
    """Batch mean |advantage| (filtered groups count as zero)."""
    advantages, _ = group_advantages(batch, cfg)
    return float(advantages.abs().mean())


def bandit_step(model: nn.Module, optimizer: torch.optim.Optimizer, suite: Arith, pools: Sequence[Sequence[Case]],
                cfg: GRPOConfig, hb: HarnessBanditConfig, state: SchedulerState, seed: int, step: int) -> StepResult:
    """One scheduled GRPO step (see the module docstring); updates `state` in place.
    Deterministic in (weights, state, seed, step) on CPU."""
    start = time.perf_counter()
    harness, probs, bonus = choose_harness(state, hb, seed, step)
    on = next(model.parameters()).device
    generator = torch.Generator(device=on).manual_seed(seed_for(seed, "grpo-rollouts", step))
    batch = collect(model, suite, draw_prompts(pools[harness], cfg.prompts_per_step, seed, step), cfg, generator)
    loss, metrics = policy_update(model, optimizer, batch, cfg)
    sketch = gradient_sketch(model, hb.sketch_dim, seed)
    learn_raw, transfer_raw = learnability(batch, cfg), transferability(state, harness, sketch)
    metrics.update(record(state, hb, harness, sketch, learn_raw, transfer_raw), harness=float(harness),
                   learn_raw=learn_raw, transfer_raw=transfer_raw, bonus=bonus[harness])
    metrics.update({f"prob_{name}": p for name, p in zip(hb.harnesses, probs)})
    wall_s = time.perf_counter() - start
    return StepResult(loss, metrics, int(batch.gen_mask.sum()), int(batch.gen_mask.shape[0]), wall_s)

