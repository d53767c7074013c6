"""STRIDE's pure step on tiny models (no store, no Prefect): the early stop, the
prefix buffer's restart, the loss mask and the buffer's round trip."""

import math

import pytest
import torch
from torch import nn

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM
from schemas.post_training import STRIDEMethodConfig
from suites.arith.episodes import batch, episodes
from suites.arith.tokenizer import EOS, Tokenizer
from tasks.loops.opd.opd_stride import (
    BufferEntry,
    StrideContext,
    buffer_state,
    load_buffer,
    restart_plan,
    stride_step,
    teacher_turn_scores,
)

torch.set_num_threads(1)
TOK = Tokenizer()
V = TOK.vocab_size
ONE = TOK.encode("1")[0]
UNIFORM_LP = -math.log(V)


class ContextFreeLM(nn.Module):
    """Next-token logits that ignore the context: a learnable bias over the vocabulary."""

    def __init__(self, probs: dict[int, float]):
        super().__init__()
        logits = torch.full((V,), -30.0)
        for token, p in probs.items():
            logits[token] = math.log(p)
        self.bias = nn.Parameter(logits)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.bias.expand(tokens.shape[0], tokens.shape[1], V)


def uniform_teacher() -> ContextFreeLM:
    return ContextFreeLM({t: 1.0 / V for t in range(V)})


def short_turn_student() -> ContextFreeLM:
    """Emits "1" or <eos>: turns end within the budget with near certainty."""
    return ContextFreeLM({EOS: 0.8, ONE: 0.2})


def context(student: nn.Module, teacher: nn.Module, pool, episodes_per_step: int = 1, **cfg) -> StrideContext:
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-2)
    return StrideContext(student, optimizer, teacher, pool, STRIDEMethodConfig(**cfg), 0, episodes_per_step)


THREE_TURNS = [e for e in episodes(40, 0) if e.n_turns == 3]


def test_teacher_turn_scores_sum_agent_tokens_per_turn_and_skip_observations():
    ep = THREE_TURNS[0]
    turns = [[ONE, ONE, EOS], [ONE, EOS]]  # 3 then 2 agent tokens; an observation sits between
    played = batch(TOK, [ep], [turns])
    _, sums, counts = teacher_turn_scores(uniform_teacher(), played, 3)
    assert counts.tolist() == [[3.0, 2.0, 0.0]]
    torch.testing.assert_close(sums, torch.tensor([[3 * UNIFORM_LP, 2 * UNIFORM_LP, 0.0]], dtype=sums.dtype))


@pytest.mark.parametrize("margin, stops", [(0.01, True), (-0.01, False)])
def test_early_stop_triggers_exactly_at_the_threshold(margin, stops):
    # every token scores -log V under the uniform teacher: a threshold just above stops
    # every rollout after its first new turn, just below never stops
    pool = THREE_TURNS[:4]
    ctx = context(short_turn_student(), uniform_teacher(), pool, 4, stop_threshold=UNIFORM_LP + margin,
                  pass_threshold=0.0)
    result, buffer = stride_step(ctx, {}, step=0)
    played = [len(buffer[e.problem.prompt].turns) for e in pool]
    assert played == ([1, 1, 1, 1] if stops else [3, 3, 3, 3])
    assert result.metrics["stops"] == (4.0 if stops else 0.0)
    # the stopping turn is trained on: every new agent token carries loss
    assert result.metrics["loss_tokens"] == result.metrics["gen_tokens"] == result.tokens > 0
    assert result.metrics["teacher_tokens"] == result.metrics["gen_tokens"]
    assert result.metrics["accuracy"] == 0.0 and result.metrics["restarts"] == 0.0


def test_buffer_restarts_at_the_weakest_turn_of_the_leading_passing_run():
    ep = THREE_TURNS[0]
    first = (ONE, ONE, ONE, EOS)
    stored = (first, (ONE, EOS), (EOS,))
    cfg = STRIDEMethodConfig(pass_threshold=-1.0, stop_threshold=-2.0)
    cases = {(-0.3, -0.6, -2.5): 1, (-0.7, -0.2, -0.4): 0, (-0.3, -1.5, -0.1): 0, (-0.2, -0.4, -0.3): 1}
    for scores, expected in cases.items():
        restart, reuse = restart_plan({ep.problem.prompt: BufferEntry(stored, scores)}, [ep], cfg)
        assert restart == [expected] and reuse == [[list(t) for t in stored[:expected]]], scores
    restart, reuse = restart_plan({ep.problem.prompt: BufferEntry(stored, (-0.3, -0.6, -2.5))}, [ep],
                                  cfg.model_copy(update={"prefix_reuse": False}))
    assert restart == [0] and reuse == [[]]

    # the step replays turn 0 verbatim, generates turns 1-2 and trains only on those
    buffer = {ep.problem.prompt: BufferEntry(stored, (-0.3, -0.6, -2.5))}
    ctx = context(short_turn_student(), uniform_teacher(), [ep], early_stop=False)
    result, after = stride_step(ctx, buffer, step=0)
    entry = after[ep.problem.prompt]
    assert entry.turns[0] == first and len(entry.turns) == 3
    assert result.metrics["restarts"] == 1.0 and result.metrics["reused_turns"] == 1.0
    assert result.metrics["new_turns"] == 2.0
    assert result.tokens == len(entry.turns[1]) + len(entry.turns[2]) == result.metrics["loss_tokens"]
    torch.testing.assert_close(torch.tensor(entry.scores), torch.full((3,), UNIFORM_LP))
    assert buffer[ep.problem.prompt].scores == (-0.3, -0.6, -2.5)  # the input buffer is not mutated


def test_early_stop_after_a_restart_stops_at_the_first_new_turn():
    ep = THREE_TURNS[1]
    buffer = {ep.problem.prompt: BufferEntry(((ONE, EOS), (ONE, EOS), (EOS,)), (-0.3, -0.5, -0.1))}
    ctx = context(short_turn_student(), uniform_teacher(), [ep], stop_threshold=UNIFORM_LP + 0.01, pass_threshold=-0.6)
    result, after = stride_step(ctx, buffer, step=3)
    # restart at turn 1 (weakest of the passing run -0.3, -0.5, -0.1); the reused turn 0
    # scores -log V too but is not new, so only turn 1 counts and triggers the stop
    assert result.metrics["reused_turns"] == 1.0 and result.metrics["stops"] == 1.0
    assert len(after[ep.problem.prompt].turns) == 2 and result.metrics["new_turns"] == 1.0


def test_tinylm_student_learns_and_the_step_is_reproducible_from_a_stored_buffer():
    def tiny(seed: int, width: int) -> TinyLM:
        torch.manual_seed(seed)
        return TinyLM(TinyLMConfig(vocab_size=V, d_model=width, n_layers=1, n_heads=2, max_len=64))

    pool = episodes(6, 1)
    ctx = context(tiny(0, 16), tiny(1, 32), pool, 3, max_turn_tokens=4, stop_threshold=-3.0, pass_threshold=-2.0)
    before = [p.detach().clone() for p in ctx.student.parameters()]
    first, buffer = stride_step(ctx, {}, step=0)
    assert math.isfinite(first.loss) and first.metrics["grad_norm"] > 0
    assert all(not torch.equal(a, b) for a, b in zip(before, ctx.student.parameters()))
    assert first.metrics["teacher_forward_tokens"] > first.metrics["teacher_tokens"] > 0

    stored = buffer_state(buffer)
    assert load_buffer(stored) == buffer
    weights = {k: v.clone() for k, v in ctx.student.state_dict().items()}
    outcomes = []
    for _ in range(2):  # resume from the same weights and stored buffer twice: identical steps
        student = tiny(0, 16)
        student.load_state_dict(weights)
        resumed = context(student, ctx.teacher, pool, 3, **ctx.cfg.model_dump())
        result, nxt = stride_step(resumed, load_buffer(stored), step=1)
        outcomes.append((result.loss, result.metrics["gen_tokens"], buffer_state(nxt)))
    assert outcomes[0] == outcomes[1]


def test_loop_step_keeps_the_buffer_in_the_method_state_through_a_checkpoint():
    from schemas.post_training import DistillRunConfig
    from suites.arith import Arith
    from tasks.loops.opd.distill_train import load_student, student_bytes
    from tasks.loops.opd.opd_rollouts import StepContext
    from tasks.loops.opd.opd_stride import STATE_KEY, loop_step

    suite = Arith(categories=("chain",), n_per_category=30, seed=0)
    cfg = STRIDEMethodConfig(max_turn_tokens=4, stop_threshold=-3.0, pass_threshold=-2.0)
    run = DistillRunConfig(method="stride", categories=("chain",), prompts_per_step=2, rollouts=1, lr=1e-2, stride=cfg)
    torch.manual_seed(0)
    student = TinyLM(TinyLMConfig(vocab_size=V, d_model=16, n_layers=1, n_heads=2, max_len=64))
    teacher = uniform_teacher()
    ctx = StepContext(student, teacher, torch.optim.AdamW(student.parameters(), lr=1e-2), [], run, 0, suite, {})
    loop_step(ctx, 0)
    assert len(ctx.state[STATE_KEY]) == 2  # one trajectory per drawn problem
    blob = student_bytes(student, ctx.optimizer, 1, ctx.state)
    steps = []
    for _ in range(2):
        model, optimizer, done, state = load_student(blob, run.lr)
        assert done == 1 and state == ctx.state
        resumed = StepContext(model, teacher, optimizer, [], run, 0, suite, state)
        result = loop_step(resumed, 1)
        steps.append((result.loss, result.metrics["restarts"], resumed.state[STATE_KEY]))
    assert steps[0] == steps[1] and len(steps[0][2]) >= 2
