"""CLOOPD's step on the opd loop's shared rollouts with tiny models (no store, no
Prefect): pass counts under each allocation, one teacher call per frozen batch, the run
state carried in the method state, and learning."""

import math
from dataclasses import replace

import pytest
import torch
from torch import nn

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM
from schemas.post_training import CLOOPDMethodConfig, DistillRunConfig
from suites.arith import Arith
from suites.arith.prompts import prompt_source
from suites.arith.tokenizer import Tokenizer
from tasks.loops.opd.opd_cloopd import STATE_KEY, CloopdState, cloopd_step
from tasks.loops.opd.opd_rollouts import StepContext

torch.set_num_threads(1)
SUITE = Arith(categories=("add",), n_per_category=40, seed=0)
POOL = prompt_source("pool", SUITE.problems("train"), 0)
RUN = DistillRunConfig(prompts_per_step=4, rollouts=1, max_new_tokens=6)


def tiny(seed: int, width: int = 16) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(TinyLMConfig(vocab_size=Tokenizer().vocab_size, d_model=width, n_layers=1, n_heads=2, max_len=32))


class CountingTeacher(nn.Module):
    """Wraps a model and counts its forward calls and the positions it read."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model, self.calls, self.positions_read = model, 0, 0

    def forward(self, tokens, mask=None):
        self.calls += 1
        self.positions_read += int(tokens.numel() if mask is None else mask.sum())
        return self.model(tokens, mask)


def context(student: nn.Module, teacher: nn.Module, state: CloopdState | None = None) -> StepContext:
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-2, weight_decay=0.0)
    method_state = {STATE_KEY: (state or CloopdState()).as_meta()}
    return StepContext(student, teacher, optimizer, POOL, RUN, 0, SUITE, method_state)


def step(ctx: StepContext, index: int, **cfg):
    """One step -> (result, the run state it left in the method state)."""
    run = RUN.model_copy(update={"method": "cloopd", "cloopd": CLOOPDMethodConfig(**cfg)})
    result = cloopd_step(replace(ctx, cfg=run), index)
    return result, CloopdState.from_meta(ctx.state[STATE_KEY])


@pytest.mark.parametrize("passes", [1, 2, 3])
def test_fixed_passes_call_the_teacher_once_and_count_its_tokens_once(passes):
    teacher = CountingTeacher(tiny(1, 32))
    ctx = context(tiny(0), teacher)
    before = [p.detach().clone() for p in ctx.student.parameters()]
    result, state = step(ctx, 0, passes=passes)
    m = result.metrics
    assert teacher.calls == 1 and m["passes"] == passes
    assert m["teacher_tokens"] == teacher.positions_read  # one read of prompts + responses, counted once
    assert m["actor_tokens"] == passes * result.tokens and result.tokens > 0
    assert sorted(k for k in m if k.startswith("progress_")) == [f"progress_{i + 1}" for i in range(passes)]
    assert all(math.isfinite(v) for v in m.values()) and math.isfinite(result.loss)
    assert 0.0 <= m["alpha"] <= 1.0 and m["kl_proxy"] <= CLOOPDMethodConfig().kl_bound + 1e-9
    assert all(not torch.equal(a, b) for a, b in zip(before, ctx.student.parameters()))
    assert state == CloopdState(tokens_used=passes * result.tokens, third_passes=0, batches=1)


def test_student_equal_to_teacher_gives_alpha_one_zero_signal_and_no_update():
    student = tiny(0)
    teacher = tiny(0)  # same weights: log q_alpha = log p_S for every alpha
    ctx = context(student, teacher)
    before = [p.detach().clone() for p in student.parameters()]
    result, _ = step(ctx, 0, passes=2)
    assert result.metrics["alpha"] == 1.0 and abs(result.metrics["kl_proxy"]) < 1e-6
    assert result.metrics["progress_1"] == 0.0 and result.loss == 0.0
    assert all(torch.equal(a, b) for a, b in zip(before, student.parameters()))


@pytest.mark.parametrize(
    "cfg, third",
    [
        ({"allocation": "random", "random_third": 1.0}, True),
        ({"allocation": "random", "random_third": 0.0}, False),
        ({"allocation": "tpmr", "tpmr_quota": 0.0}, False),  # quota check: 0 + 1 <= 0 * 1 fails
        ({"allocation": "tpmr", "tpmr_min_rate": 1e9}, False),  # rate check fails
        ({"allocation": "tpmr", "token_budget": 1}, False),  # budget check fails
    ],
)
def test_third_pass_allocation_never_exceeds_three_passes(cfg, third):
    teacher = CountingTeacher(tiny(1, 32))
    ctx = context(tiny(0), teacher, CloopdState(tokens_used=5, third_passes=1, batches=2))
    result, nxt = step(ctx, 2, **cfg)
    assert result.metrics["passes"] == (3.0 if third else 2.0) and result.metrics["third_pass"] == float(third)
    assert teacher.calls == 1
    assert nxt == CloopdState(5 + result.metrics["actor_tokens"], 1 + int(third), 3)


def test_tpmr_decisions_follow_its_checks_over_steps():
    ctx = context(tiny(0), tiny(1, 32))
    for index in range(3):
        result, state = step(ctx, index, allocation="tpmr", tpmr_quota=1.0, tpmr_max_pass_kl=10.0)
        assert result.metrics["passes"] in (2.0, 3.0)
        # rate check is progress_2 / tokens > 0: a third pass exactly when pass 2 made progress
        assert result.metrics["third_pass"] == float(result.metrics["progress_2"] > 0)
    assert state.batches == 3 and state.third_passes <= 3


def test_invalid_allocation_names_the_field_and_the_fix():
    with pytest.raises(ValueError, match="passes=3"):
        CLOOPDMethodConfig(allocation="tpmr", passes=3)
