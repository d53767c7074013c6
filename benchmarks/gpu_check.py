"""GPU check: one grpo training chunk on CUDA when the machine has one (else on CPU, and
it says so), its generated tokens/s, and whether the GPU computes the CPU's losses.

Chunk. `--steps` GRPO steps of `tasks.training.policy.train_step` (what a grpo chunk
runs: sampling, rewards, group advantages, clipped loss, AdamW) from a supervised warm
start (`pretrain`, on CPU) on arith addition, on `tasks.training.policy.device()`, with
the shaped reward and no group filter, so every group carries gradient even from a weak
warm start. tokens/s = generated tokens / wall time of the steps after the first (the
first pays for CUDA's start-up).

Equality. Each device samples from its own generator (CUDA's stream is not the CPU's),
so a chunk on each would train on different rollouts. The check samples every step's
rollouts once, on CPU from the CPU policy (`collect`), and applies the same update
(`policy_update`) to a CPU copy and a device copy of the warm start. GRPO's loss is 0 up
to rounding at ratio 1 (the advantages are centred), so the gradient norm is compared
too. Exit 1 when a pair differs by more than `--tolerance` x max(1, |value|).

    .venv/bin/python benchmarks/gpu_check.py                 # CUDA when present, < 2 min
    .venv/bin/python benchmarks/gpu_check.py --quick --cpu   # CPU against CPU, seconds
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields, replace
from pathlib import Path
from typing import Optional

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the kernels package, not benchmarks/kernels.py

from schemas.ids import seed_for  # noqa: E402
from schemas.post_training import GRPOConfig  # noqa: E402
from suites.arith import Arith  # noqa: E402
from tasks.training.policy import (  # noqa: E402
    collect,
    device,
    draw_prompts,
    load_checkpoint,
    policy_update,
    pretrain,
    save_checkpoint,
    train_step,
)

CPU = torch.device("cpu")


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="GRPO steps of the chunk and of the check (default 10)")
    parser.add_argument("--pretrain-steps", type=int, default=300, help="supervised warm-start steps (default 300)")
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step (default 8)")
    parser.add_argument("--group", type=int, default=8, help="rollouts per prompt (default 8)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-3, help="relative, floored at 1 (default 1e-3)")
    parser.add_argument("--cpu", action="store_true", help="ignore CUDA: the chunk and the check's copy on CPU")
    parser.add_argument("--quick", action="store_true", help="3 steps, 20 warm-start steps, 2 x 4 rollouts")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.pretrain_steps, args.prompts, args.group = 3, 20, 2, 4
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the first step is not timed)")
    return args


def chunk_throughput(warm: bytes, on: torch.device, suite: Arith, cfg: GRPOConfig, seed: int,
                     steps: int) -> tuple[float, float]:
    """(generated tokens/s of steps 2.., seconds of step 1) of a grpo chunk on `on`."""
    model, optimizer, _ = load_checkpoint(warm, cfg.lr, on)
    train = suite.cases("train")
    results = [train_step(model, optimizer, suite, train, cfg, seed, s) for s in range(steps)]
    timed = results[1:]
    return sum(r.tokens for r in timed) / sum(r.wall_s for r in timed), results[0].wall_s


def to_device(batch, on: torch.device):
    return replace(batch, **{f.name: getattr(batch, f.name).to(on) for f in fields(batch)
                             if isinstance(getattr(batch, f.name), torch.Tensor)})


def paired_updates(warm: bytes, on: torch.device, suite: Arith, cfg: GRPOConfig, seed: int,
                   steps: int) -> list[tuple[float, float, float, float]]:
    """Per step (loss on CPU, loss on `on`, grad norm on CPU, grad norm on `on`): the same
    CPU-sampled rollouts update a CPU copy and an `on` copy of the warm start."""
    cpu_model, cpu_opt, _ = load_checkpoint(warm, cfg.lr, CPU)
    dev_model, dev_opt, _ = load_checkpoint(warm, cfg.lr, on)
    train, rows = suite.cases("train"), []
    for step in range(steps):
        generator = torch.Generator().manual_seed(seed_for(seed, "grpo-rollouts", step))
        batch = collect(cpu_model, suite, draw_prompts(train, cfg.prompts_per_step, seed, step), cfg, generator)
        cpu_loss, cpu_metrics = policy_update(cpu_model, cpu_opt, batch, cfg)
        dev_loss, dev_metrics = policy_update(dev_model, dev_opt, to_device(batch, on), cfg)
        rows.append((cpu_loss, dev_loss, cpu_metrics["grad_norm"], dev_metrics["grad_norm"]))
    return rows


def within(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    on = CPU if args.cpu else device()
    if on.type == "cuda":
        print(f"device: {on} ({torch.cuda.get_device_name(on)}), torch {torch.__version__}")
    else:
        print(f"device: cpu ({'--cpu' if args.cpu else 'no CUDA device'}): the chunk and the check run on CPU, "
              f"torch {torch.__version__}")
    cfg = GRPOConfig(categories=("add",), prompts_per_step=args.prompts, group_size=args.group,
                     pretrain_steps=args.pretrain_steps, reward="shaped", group_filter="none")
    suite = Arith(categories=cfg.categories)
    start = time.perf_counter()
    warm = save_checkpoint(pretrain(cfg.categories, args.pretrain_steps, args.seed), None, 0)
    print(f"warm start: {args.pretrain_steps} supervised steps on cpu in {time.perf_counter() - start:.1f} s")
    tokens_per_s, first_s = chunk_throughput(warm, on, suite, cfg, args.seed, args.steps)
    print(f"chunk on {on}: {args.steps} GRPO steps of {args.prompts} prompts x {args.group} rollouts; "
          f"{tokens_per_s:,.0f} generated tokens/s (steps 2-{args.steps}; step 1 took {first_s:.2f} s)")
    rows = paired_updates(warm, on, suite, cfg, args.seed, args.steps)
    print(f"\n{'step':>4} {'loss cpu':>12} {f'loss {on}':>12} {'grad cpu':>10} {f'grad {on}':>10}")
    for step, (loss_a, loss_b, grad_a, grad_b) in enumerate(rows):
        print(f"{step:>4} {loss_a:12.3e} {loss_b:12.3e} {grad_a:10.6f} {grad_b:10.6f}")
    loss_gap = max(abs(a - b) for a, b, _, _ in rows)
    grad_gap = max(abs(a - b) for _, _, a, b in rows)
    equal = all(within(a, b, args.tolerance) and within(c, d, args.tolerance) for a, b, c, d in rows)
    print(f"\nlargest difference: loss {loss_gap:.2e}, grad norm {grad_gap:.2e} "
          f"(tolerance {args.tolerance:g} x max(1, |value|)): {'equal' if equal else 'NOT EQUAL'}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
