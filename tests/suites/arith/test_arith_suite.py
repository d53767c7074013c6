import json

import pytest
import torch
from torch import nn

from kernels.advantages import filter_groups
from kernels.configs import TinyLMConfig
from kernels.model import TinyLM, sample, token_logprobs
from suites.arith import Arith
from suites.arith.tokenizer import HINT, HINT_END, SEP, Tokenizer, splice

TOK = Tokenizer()


class Oracle(nn.Module):
    """Writes `answers[prompt]` after <sep>, whatever context precedes the prompt."""

    def __init__(self, answers: dict[str, str]):
        super().__init__()
        self.answers = answers
        self.anchor = nn.Parameter(torch.zeros(()))

    def forward(self, tokens, mask=None):
        logits = torch.full((*tokens.shape, TOK.vocab_size), -50.0)
        for b, row in enumerate(tokens.tolist()):
            sep = row.index(SEP)
            start = row.index(HINT_END) + 1 if HINT_END in row else 0
            ids = TOK.encode_completion(self.answers[TOK.decode(row[start:sep])])
            logits[b, -1, ids[min(len(row) - 1 - sep, len(ids) - 1)]] = 50.0
        return logits


@pytest.fixture(scope="module")
def suite():
    return Arith(n_per_category=60, seed=0)


def test_cases_are_split_deterministic_and_json_able(suite):
    cases = suite.cases()
    assert len(cases) == 6 * 60
    assert {c.split for c in cases} == {"train", "select", "holdout"}
    assert [c.case_id for c in cases] == [c.case_id for c in Arith(n_per_category=60, seed=0).cases()]
    assert len({c.case_id for c in cases}) == len(cases)
    assert all(c.split == "holdout" for c in suite.cases("holdout"))
    payload = json.loads(json.dumps(cases[0].payload))
    assert set(payload) == {"prompt", "answer", "category", "target", "contexts"}
    assert set(payload["contexts"]) == {"solution", "method", "angle", "category", "answer"}


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown arith categories"):
        Arith(categories=("add", "mul"))
    with pytest.raises(ValueError, match="n_per_category"):
        Arith(n_per_category=5)


def test_prompts_with_and_without_context(suite):
    cases = suite.cases("select")[:4]
    plain, plain_mask = suite.encode_prompts(cases)
    hinted, _ = suite.encode_prompts(cases, level="category")
    assert (plain[:, -1] == SEP).all() and plain_mask[:, -1].all()
    assert plain_mask.sum(-1).tolist() == [len(TOK.encode_prompt(c.payload["prompt"])) for c in cases]
    assert all(HINT in row for row in hinted.tolist())
    with pytest.raises(ValueError, match="unknown context level"):
        suite.encode_prompts(cases, level="L9")


def test_oracle_scores_perfectly_and_a_wrong_model_scores_zero(suite):
    answers = {p.prompt: p.target(suite.style) for p in suite.problems()}
    assert suite.evaluate(Oracle(answers))["all"] == 1.0
    assert suite.evaluate(Oracle(answers), level="method")["all"] == 1.0
    wrong = {k: "1#x" for k in answers}
    assert suite.evaluate(Oracle(wrong), split="select")["all"] == 0.0


def test_sampled_outputs_decode_and_score(suite):
    cases = suite.cases("holdout")[:5]
    tokens, mask = suite.encode_prompts(cases)
    oracle = Oracle({c.payload["prompt"]: c.payload["target"] for c in cases})
    rollout = sample(oracle, tokens, suite.max_new_tokens, prompt_mask=mask, eos_id=TOK.eos_id)
    outputs = suite.decode(rollout.tokens[:, tokens.shape[1] :])
    assert outputs == [c.payload["target"] for c in cases]
    assert suite.accuracy(cases, outputs) == 1.0
    verdict = suite.score(cases[0], "nope")
    assert verdict.valid and verdict.metrics["correct"] == 0.0 and "nope" in verdict.reason


def test_teacher_view_of_student_completions_is_aligned(suite):
    """A student's sampled completions re-read under hinted prompts: the spliced batch's
    log-probs from column P-1 are those of each unpadded hinted sequence."""
    torch.manual_seed(0)
    model = TinyLM(TinyLMConfig(vocab_size=TOK.vocab_size, d_model=32, n_layers=1, n_heads=2, max_len=96)).eval()
    cases = suite.cases("holdout")[:3]
    tokens, mask = suite.encode_prompts(cases)
    rollout = sample(model, tokens, 6, prompt_mask=mask, eos_id=TOK.eos_id, generator=torch.Generator().manual_seed(1))
    completion = rollout.tokens[:, tokens.shape[1] :]
    hinted, hinted_mask = suite.encode_prompts(cases, level="method")
    full, full_mask = splice(hinted, hinted_mask, completion, rollout.mask)
    teacher_lp = token_logprobs(model, full, full_mask)[:, hinted.shape[1] - 1 :]  # (B, N) like rollout.logprobs
    for b, case in enumerate(cases):
        n = int(rollout.mask[b].sum())
        row = TOK.encode_prompt(case.payload["prompt"], case.payload["contexts"]["method"]) + completion[b, :n].tolist()
        alone = token_logprobs(model, torch.tensor([row]))[0, -n:]
        torch.testing.assert_close(teacher_lp[b, :n], alone, atol=1e-5, rtol=1e-5)
        assert (teacher_lp[b, n:] == 0).all()


def test_rewards_keep_outcomes_apart_from_shaped_rewards(suite):
    cases = [suite.cases("train")[0]] * 4
    outputs = ["0", "00", "0000000", "1#0"]
    outcomes, shaped = suite.rewards(cases, outputs, lengths=[2, 3, 8, 4], coef=0.5, max_length=16)
    assert outcomes.tolist() == [0.0] * 4
    assert shaped.tolist() == pytest.approx([-0.0625, -0.09375, -0.25, -0.125])
    assert filter_groups(outcomes[None], shaped[None], by="outcome").tolist() == [False]
    assert filter_groups(outcomes[None], shaped[None], by="shaped").tolist() == [True]


def test_budget_and_scorer_version(suite):
    assert suite.max_new_tokens >= max(len(p.target()) for p in suite.problems()) + 1
    assert len(suite.scorer_version()) == 16
