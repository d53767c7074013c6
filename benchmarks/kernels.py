"""Kernel cost on CPU: each loss's forward+backward as a ratio to the model's own, and
the tokens per second of a whole GRPO step.

Losses. One batch is sampled once from the default TinyLM (`kernels.configs.TinyLMConfig`:
32-token vocabulary, d_model 64, 2 layers, 4 heads): B sequences of T tokens, a random
prompt of P tokens then T - P tokens drawn by `kernels.model.sample` that stop at eos
(id 0), in groups of n completions per prompt. Everything a loss treats as a constant is
computed once, outside the timings: sampling log-probs, rewards, a teacher (a second
TinyLM) scoring the sampled tokens under the real prompt and under two other random
prompts (the Cal-OPD probes and the Attract/Repel contexts), a TinyCritic's old values
and returns, a perturbed copy of the log-probs standing in for PACT's updated actor, and
CLOOPD's frozen batch. The reference is the model's own step with a trivial loss:
forward, next-token log-prob gather, minus their mean, backward (for the critic losses:
TinyCritic forward, mean of the values, backward). Each loss step is the same forward,
then the loss's own work (advantages, selection, masks, reduction), then backward.
One round times every row once, so drift from other jobs hits all rows alike. ratio =
median over rounds of loss step / reference step of the same model in the same round
(1.00: the loss is free); added ms = median of the same paired differences; step ms and
spread (interquartile range / median) describe the step times themselves. The A/A check
times the TinyLM reference again, last in each round: its ratio is the noise floor of
every other ratio.

GRPO. One step: n completions for each of B / n random prompts from `kernels.model.sample`
(no KV cache), reward 1 when a completion contains the target token (id 1) before eos
and 0 otherwise, GRPO group advantages, the clipped policy loss (token mean) against the
sampling log-probs, backward, one AdamW step. tokens/s counts generated tokens only
(each is sampled once and trained on once; prompts and post-eos filler are not counted)
over the wall time of whole steps, sampling included.

    .venv/bin/python benchmarks/kernels.py            # B=32, T=64, 1 thread
    .venv/bin/python benchmarks/kernels.py --quick    # tiny sizes, a few seconds
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the kernels package, not this file

from kernels.advantages import dr_grpo_advantages, grpo_advantages  # noqa: E402
from kernels.build import build_loss  # noqa: E402
from kernels.cloopd import freeze_batch, pass_inputs  # noqa: E402
from kernels.configs import (  # noqa: E402
    AttractRepelConfig,
    CalOPDConfig,
    CLOOPDConfig,
    DIALConfig,
    GRPODropoutConfig,
    GVPOConfig,
    GVPODistillConfig,
    OPDConfig,
    PACTConfig,
    PolicyLossConfig,
    TinyLMConfig,
    ValueLossConfig,
)
from kernels.grpo_dropout import grpo_dropout  # noqa: E402
from kernels.model import TinyCritic, TinyLM, sample, token_logprobs  # noqa: E402
from kernels.types import (  # noqa: E402
    CalOPDInputs,
    ContrastInputs,
    DistillInputs,
    FrozenBatch,
    GVPODistillInputs,
    GVPOInputs,
    PACTInputs,
    PolicyInputs,
    Rollout,
    ValueInputs,
)

EOS_ID = 0
TARGET_ID = 1


@dataclass(frozen=True)
class Sizes:
    batch: int = 32
    """B sequences per batch (the GRPO step samples the same number)."""
    group: int = 8
    """n completions per prompt; B / n prompts."""
    seq_len: int = 64
    """T tokens per sequence, prompt included (at most the model's max_len, 64)."""
    prompt_len: int = 16
    """P prompt tokens; T - P are sampled."""
    warmup: int = 5
    """Untimed repeats before the timed ones (GRPO: untimed steps)."""
    repeats: int = 50
    """Timed repeats per loss row (median)."""
    grpo_steps: int = 10
    """Timed GRPO steps."""


QUICK = Sizes(batch=8, group=4, seq_len=16, prompt_len=4, warmup=1, repeats=3, grpo_steps=2)


@dataclass(frozen=True)
class Batch:
    """One sampled batch and every constant a loss reads; (B, N) with N = T - P unless noted."""

    tokens: Tensor  # (B, T) prompt then sampled tokens
    prompt_len: int
    mask: Tensor  # sampled tokens up to and including eos
    old_logprobs: Tensor  # at sampling time, 0 where ~mask
    rewards: Tensor  # (G, n) target-token reward
    teacher: Tensor  # teacher log-probs given the real prompt
    teacher_pos: Tensor  # teacher given another random prompt
    teacher_neg: Tensor  # teacher given a third random prompt
    old_values: Tensor  # critic value logits at sampling time
    returns: Tensor  # GAE(lambda=1) returns of the terminal reward: the reward on every valid token
    new_logprobs: Tensor  # stand-in for PACT's updated actor: old + N(0, 0.1^2)
    frozen: FrozenBatch  # CLOOPD's target, from the old and teacher log-probs


class Case(NamedTuple):
    name: str
    critic: bool  # forward through the TinyCritic (values) instead of the TinyLM (log-probs)
    cfg: Any  # the kernel config it exercises; None for a reference
    loss: Callable[[Tensor], Tensor]  # (B, N) log-probs or values with grad -> scalar loss


class Row(NamedTuple):
    name: str
    model: str
    ms: float  # median step
    added_ms: float  # median over rounds of step - reference step of the same model
    spread: float  # interquartile range / median of the steps
    ratio: float  # median over rounds of step / reference step of the same model


class Table(NamedTuple):
    references: list[Row]
    losses: list[Row]  # one per `loss_cases` entry, in order
    check: Row  # the TinyLM reference again, last in each round
    batch: Batch


def random_prompts(cfg: TinyLMConfig, n: int, length: int, generator: torch.Generator) -> Tensor:
    """(n, length) token ids that are never eos."""
    return torch.randint(1, cfg.vocab_size, (n, length), generator=generator)


def target_reward(rollout: Rollout) -> Tensor:
    """(B,) 1.0 when the completion's valid tokens contain TARGET_ID, else 0.0."""
    generated = rollout.tokens[:, -rollout.mask.shape[1] :]
    return ((generated == TARGET_ID) & rollout.mask).any(-1).float()


def generated_logprobs(model: TinyLM, tokens: Tensor, prompt_len: int) -> Tensor:
    """(B, T - P) log-probs of the sampled tokens, aligned with `Rollout.logprobs`."""
    return token_logprobs(model, tokens)[:, prompt_len - 1 :]


def critic_values(critic: TinyCritic, tokens: Tensor, prompt_len: int) -> Tensor:
    """(B, T - P) value logits of the state before each sampled token."""
    return critic(tokens)[:, prompt_len - 1 : -1]


def make_batch(sizes: Sizes, seed: int = 0) -> tuple[TinyLM, TinyCritic, Batch]:
    """The policy, the critic and one sampled batch with every constant precomputed."""
    cfg = TinyLMConfig()
    torch.manual_seed(seed)
    policy, teacher, critic = TinyLM(cfg), TinyLM(cfg), TinyCritic(cfg)
    gen = torch.Generator().manual_seed(seed)
    P, prompts = sizes.prompt_len, sizes.batch // sizes.group
    rollout = sample(policy, random_prompts(cfg, prompts, P, gen).repeat_interleave(sizes.group, 0),
                     sizes.seq_len - P, generator=gen, eos_id=EOS_ID)
    tokens, mask = rollout.tokens, rollout.mask
    rewards = target_reward(rollout)
    with torch.no_grad():
        probes = [torch.cat([random_prompts(cfg, sizes.batch, P, gen), tokens[:, P:]], 1) for _ in range(2)]
        lp_t, lp_pos, lp_neg = (generated_logprobs(teacher, t, P) * mask for t in (tokens, *probes))
        old_values = critic_values(critic, tokens, P)
    noise = 0.1 * torch.randn(mask.shape, generator=gen)
    batch = Batch(
        tokens, P, mask, rollout.logprobs, rewards.view(-1, sizes.group), lp_t, lp_pos, lp_neg, old_values,
        rewards[:, None] * mask, (rollout.logprobs + noise) * mask,
        freeze_batch(rollout.logprobs, lp_t, mask, CLOOPDConfig()),
    )
    return policy, critic, batch


def policy_cases(b: Batch) -> list[Case]:
    """The clipped surrogate under each aggregation, GRPODropout and CLOOPD; advantages
    (and GRPODropout's selection, CLOOPD's freeze) are computed inside the step."""
    token, seq = PolicyLossConfig(), PolicyLossConfig(aggregation="seq_mean")
    dr = PolicyLossConfig(aggregation="seq_sum_constant", norm_tokens=b.mask.shape[1])
    drop, cloopd = GRPODropoutConfig(), CLOOPDConfig()
    token_loss, cloopd_loss = build_loss(token), build_loss(cloopd)

    def clipped(cfg: PolicyLossConfig, advantages: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
        loss = build_loss(cfg)
        return lambda lp: loss(PolicyInputs(lp, b.old_logprobs, advantages(b.rewards).view(-1, 1), b.mask)).loss

    def dropout(lp: Tensor) -> Tensor:
        sel = grpo_dropout(grpo_advantages(b.rewards), b.old_logprobs.sum(-1).view_as(b.rewards), drop)
        kept = b.mask & sel.kept.view(-1, 1)  # dropped rollouts leave the normaliser too
        return token_loss(PolicyInputs(lp, b.old_logprobs, sel.advantages.view(-1, 1), kept)).loss

    def freeze_and_pass(lp: Tensor) -> Tensor:
        return cloopd_loss(pass_inputs(lp, freeze_batch(b.old_logprobs, b.teacher, b.mask, cloopd))).loss

    return [
        Case("GRPO clip, token mean", False, token, clipped(token, grpo_advantages)),
        Case("GRPO clip, seq mean", False, seq, clipped(seq, grpo_advantages)),
        Case("Dr. GRPO (seq sum / const)", False, dr, clipped(dr, dr_grpo_advantages)),
        Case("GRPODropout + clip", False, drop, dropout),
        Case("CLOOPD pass", False, cloopd, lambda lp: cloopd_loss(pass_inputs(lp, b.frozen)).loss),
        Case("CLOOPD freeze + pass", False, cloopd, freeze_and_pass),
    ]


def sequence_cases(b: Batch) -> list[Case]:
    """GVPO and GVPO-OPD on whole-sequence log-probs (G, n); the sampling policy is GVPO's reference."""
    gvpo, gvpo_opd = GVPOConfig(), GVPODistillConfig()
    gvpo_loss, gvpo_opd_loss = build_loss(gvpo), build_loss(gvpo_opd)
    lengths = b.mask.sum(-1).view_as(b.rewards)

    def seq(lp: Tensor) -> Tensor:
        return (lp * b.mask).sum(-1).view_as(b.rewards)

    return [
        Case("GVPO", False, gvpo, lambda lp: gvpo_loss(GVPOInputs(seq(lp), seq(b.old_logprobs), b.rewards)).loss),
        Case("GVPO-OPD", False, gvpo_opd,
             lambda lp: gvpo_opd_loss(GVPODistillInputs(seq(lp), seq(b.teacher), lengths)).loss),
    ]


def distill_cases(b: Batch) -> list[Case]:
    """The sampled-token OPD family against the teacher's log-probs."""
    opd, dial, cal, contrast = OPDConfig(), DIALConfig(), CalOPDConfig(), AttractRepelConfig()
    opd_loss, dial_loss, cal_loss, contrast_loss = (build_loss(c) for c in (opd, dial, cal, contrast))
    return [
        Case("OPD reverse KL", False, opd, lambda lp: opd_loss(DistillInputs(lp, b.teacher, b.mask)).loss),
        Case("DIAL-OPD", False, dial, lambda lp: dial_loss(DistillInputs(lp, b.teacher, b.mask)).loss),
        Case("Cal-OPD", False, cal,
             lambda lp: cal_loss(CalOPDInputs(lp, b.teacher, b.teacher_pos, b.teacher_neg, b.mask)).loss),
        Case("Attract/Repel", False, contrast,
             lambda lp: contrast_loss(ContrastInputs(lp, b.teacher_pos, b.teacher_neg, b.mask)).loss),
    ]


def critic_cases(b: Batch) -> list[Case]:
    """PPO's clipped value loss and PACT's critic on the TinyCritic's value logits."""
    value, pact = ValueLossConfig(), PACTConfig()
    value_loss, pact_loss = build_loss(value), build_loss(pact)
    return [
        Case("PPO value", True, value, lambda v: value_loss(ValueInputs(v, b.old_values, b.returns, b.mask)).loss),
        Case("PACT critic", True, pact,
             lambda v: pact_loss(PACTInputs(v, b.returns, b.new_logprobs, b.old_logprobs, b.mask)).loss),
    ]


def loss_cases(b: Batch) -> list[Case]:
    """One row per loss the kernels expose."""
    return policy_cases(b) + sequence_cases(b) + distill_cases(b) + critic_cases(b)


REFERENCES = [
    Case("reference: -mean log-prob", False, None, lambda lp: -lp.mean()),
    Case("reference: mean value", True, None, lambda v: v.mean()),
]
CHECK = REFERENCES[0]._replace(name="A/A check: reference again")


def time_cases(
    cases: list[Case], policy: TinyLM, critic: TinyCritic, b: Batch, warmup: int, repeats: int
) -> list[list[float]]:
    """Seconds of forward + loss + backward per case, `repeats` each after `warmup`, round-robin."""
    forwards = {False: lambda: generated_logprobs(policy, b.tokens, b.prompt_len),
                True: lambda: critic_values(critic, b.tokens, b.prompt_len)}
    times: list[list[float]] = [[] for _ in cases]
    for repeat in range(warmup + repeats):
        for case, seconds in zip(cases, times):
            (critic if case.critic else policy).zero_grad(set_to_none=True)
            start = time.perf_counter()
            case.loss(forwards[case.critic]()).backward()
            elapsed = time.perf_counter() - start
            if repeat >= warmup:
                seconds.append(elapsed)
    return times


def loss_table(sizes: Sizes, seed: int = 0) -> Table:
    """The references, one row per loss and the A/A check, all timed in the same rounds."""
    policy, critic, b = make_batch(sizes, seed)
    cases = REFERENCES + loss_cases(b) + [CHECK]
    times = time_cases(cases, policy, critic, b, sizes.warmup, sizes.repeats)
    reference = {case.critic: seconds for case, seconds in zip(REFERENCES, times)}
    rows = []
    for case, seconds in zip(cases, times):
        paired = list(zip(seconds, reference[case.critic]))
        median = statistics.median(seconds)
        q1, _, q3 = statistics.quantiles(seconds, n=4, method="inclusive")
        rows.append(Row(
            case.name, "TinyCritic" if case.critic else "TinyLM", 1e3 * median,
            1e3 * statistics.median(s - r for s, r in paired), (q3 - q1) / median,
            statistics.median(s / r for s, r in paired),
        ))
    return Table(rows[: len(REFERENCES)], rows[len(REFERENCES) : -1], rows[-1], b)


def grpo_step(model: TinyLM, optimizer: torch.optim.Optimizer, prompts: Tensor, group: int, new_tokens: int,
              gen: torch.Generator) -> tuple[int, float, float, float]:
    """One GRPO step -> (generated tokens, sampling seconds, training seconds, mean reward)."""
    loss = build_loss(PolicyLossConfig())
    start = time.perf_counter()
    rollout = sample(model, prompts.repeat_interleave(group, 0), new_tokens, generator=gen, eos_id=EOS_ID)
    sampled = time.perf_counter()
    rewards = target_reward(rollout)
    advantages = grpo_advantages(rewards.view(-1, group)).view(-1, 1)
    lp = generated_logprobs(model, rollout.tokens, prompts.shape[1])
    optimizer.zero_grad(set_to_none=True)
    loss(PolicyInputs(lp, rollout.logprobs, advantages, rollout.mask)).loss.backward()
    optimizer.step()
    end = time.perf_counter()
    return int(rollout.mask.sum()), sampled - start, end - sampled, rewards.mean().item()


def grpo_throughput(sizes: Sizes, seed: int = 0) -> dict[str, float]:
    """Timed GRPO steps after `sizes.warmup` untimed ones: generated tokens/s and the split."""
    cfg = TinyLMConfig()
    torch.manual_seed(seed)
    model = TinyLM(cfg)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed)
    steps = []
    for _ in range(sizes.warmup + sizes.grpo_steps):
        prompts = random_prompts(cfg, sizes.batch // sizes.group, sizes.prompt_len, gen)
        steps.append(grpo_step(model, optimizer, prompts, sizes.group, sizes.seq_len - sizes.prompt_len, gen))
    tokens, sampling, training, reward = (sum(column) for column in zip(*steps[sizes.warmup :]))
    n = sizes.grpo_steps
    return {
        "tokens_per_s": tokens / (sampling + training),
        "tokens_per_step": tokens / n,
        "step_ms": 1e3 * (sampling + training) / n,
        "sampling_share": sampling / (sampling + training),
        "reward_mean": reward / n,
    }


def format_table(table: Table) -> str:
    lines = [f"{'loss':<28} {'model':<10} {'step ms':>8} {'added ms':>9} {'spread':>7} {'ratio':>6}"]
    for row in table.references + table.losses + [table.check]:
        lines.append(
            f"{row.name:<28} {row.model:<10} {row.ms:8.2f} {row.added_ms:+9.2f} {row.spread:7.0%} {row.ratio:6.2f}"
        )
    return "\n".join(lines)


def summary(table: Table, grpo: dict[str, float], threads: int) -> str:
    ratios = sorted(row.ratio for row in table.losses)
    worst = max(table.losses, key=lambda row: row.ratio)
    return (f"Summary: the {len(ratios)} losses cost {ratios[0]:.2f}-{ratios[-1]:.2f}x the model's own "
            f"forward+backward (median {statistics.median(ratios):.2f}x, highest {worst.name} at "
            f"{worst.added_ms:+.2f} ms; A/A check {table.check.ratio:.2f}x); a GRPO step runs "
            f"{grpo['tokens_per_s']:,.0f} generated tokens/s on {threads} CPU thread{'s' * (threads > 1)}.")


def parse_args(argv: Optional[list[str]]) -> tuple[Sizes, int]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run, not a measurement)")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    for f in fields(Sizes):
        flag, quick = f"--{f.name.replace('_', '-')}", getattr(QUICK, f.name)
        parser.add_argument(flag, type=int, help=f"default {f.default} ({quick} with --quick)")
    args = parser.parse_args(argv)
    base = QUICK if args.quick else Sizes()
    given = {f.name: getattr(args, f.name) for f in fields(Sizes) if getattr(args, f.name) is not None}
    sizes = replace(base, **given)
    shape_ok = sizes.batch % sizes.group == 0 and 0 < sizes.prompt_len < sizes.seq_len
    if not shape_ok or min(sizes.repeats, sizes.grpo_steps) < 2:
        parser.error("need batch divisible by group, 0 < prompt-len < seq-len, repeats and grpo-steps >= 2")
    return sizes, args.threads


def main(argv: Optional[list[str]] = None) -> None:
    sizes, threads = parse_args(argv)
    torch.set_num_threads(threads)
    n_params = sum(p.numel() for p in TinyLM(TinyLMConfig()).parameters())
    print(f"torch {torch.__version__}, {threads} thread(s) of {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} at start")
    table = loss_table(sizes)
    print(f"TinyLM default config ({n_params:,} parameters); batch {sizes.batch} x {sizes.seq_len} tokens "
          f"(prompt {sizes.prompt_len} + {sizes.seq_len - sizes.prompt_len} sampled, eos-stopped: "
          f"{int(table.batch.mask.sum())} loss tokens), groups of {sizes.group}; medians over {sizes.repeats} "
          f"rounds after {sizes.warmup} warm-up\n")
    print(format_table(table))
    grpo = grpo_throughput(sizes)
    print(f"\nGRPO step ({sizes.batch // sizes.group} prompts x {sizes.group} completions of up to "
          f"{sizes.seq_len - sizes.prompt_len} tokens, reward = target token {TARGET_ID} before eos, AdamW; "
          f"{sizes.grpo_steps} steps after {sizes.warmup} warm-up): {grpo['tokens_per_step']:.0f} "
          f"generated tokens in {grpo['step_ms']:.0f} ms per step (sampling {grpo['sampling_share']:.0%}), "
          f"{grpo['tokens_per_s']:,.0f} generated tokens/s, mean reward {grpo['reward_mean']:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f} at end\n")
    print(summary(table, grpo, threads))


if __name__ == "__main__":
    main()
