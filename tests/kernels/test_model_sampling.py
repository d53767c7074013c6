import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from kernels.configs import PolicyLossConfig, TinyLMConfig
from kernels.model import TinyCritic, TinyLM, sample, token_logprobs
from kernels.policy_loss import policy_loss
from kernels.types import PolicyInputs

CFG = TinyLMConfig(vocab_size=12, d_model=32, n_layers=2, n_heads=4, max_len=24)


class Bigram(nn.Module):
    """Logits depend only on the current token: row W[token]."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.table = nn.Parameter(table)

    def forward(self, tokens, mask=None):
        return self.table[tokens]


def tiny(seed: int = 0) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(CFG).eval()


def test_default_shape_is_in_the_parameter_range():
    n = sum(p.numel() for p in TinyLM(TinyLMConfig()).parameters())
    assert 100_000 <= n <= 1_000_000


def test_token_logprobs_gathers_next_token_log_softmax():
    table = torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.2, 0.7], [1 / 3, 1 / 3, 1 / 3]]))
    tokens = torch.tensor([[0, 1, 2, 0], [2, 2, 1, 1]])
    mask = torch.tensor([[True, True, True, True], [True, True, True, False]])
    lp = token_logprobs(Bigram(table), tokens, mask)
    expected = torch.tensor([[math.log(0.25), math.log(0.7), math.log(1 / 3)], [math.log(1 / 3), math.log(1 / 3), 0.0]])
    assert_close(lp, expected)


def test_temperature_divides_logits():
    table = torch.log(torch.tensor([[0.8, 0.2], [0.5, 0.5]]))
    lp = token_logprobs(Bigram(table), torch.tensor([[0, 1]]), temperature=2.0)
    # softmax(log p / 2) = sqrt(p) / sum sqrt(p)
    assert_close(lp, torch.log(torch.tensor([[math.sqrt(0.2) / (math.sqrt(0.8) + math.sqrt(0.2))]])))


def test_model_is_causal():
    model = tiny()
    a = torch.tensor([[1, 2, 3, 4, 5]])
    b = torch.tensor([[1, 2, 3, 9, 9]])
    assert_close(model(a)[:, :3], model(b)[:, :3])
    assert not torch.allclose(model(a)[:, 3], model(b)[:, 3])


def test_left_padding_does_not_change_scores():
    model = tiny()
    plain = torch.tensor([[3, 4, 5, 6]])
    padded = torch.tensor([[0, 0, 3, 4, 5, 6]])
    mask = torch.tensor([[False, False, True, True, True, True]])
    assert_close(model(padded, mask)[:, 2:], model(plain), atol=1e-5, rtol=1e-5)


def test_critic_outputs_one_logit_per_position():
    torch.manual_seed(0)
    critic = TinyCritic(CFG)
    values = critic(torch.tensor([[1, 2, 3], [4, 5, 6]]))
    assert values.shape == (2, 3)
    critic(torch.tensor([[1, 2, 3]])).sum().backward()
    assert critic.head.weight.grad.abs().sum() > 0


def test_sequence_longer_than_max_len_is_refused():
    with pytest.raises(ValueError, match="max_len"):
        tiny()(torch.zeros(1, CFG.max_len + 1, dtype=torch.long))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampling_is_reproducible_and_logprobs_match_recomputation(temperature):
    model = tiny()
    prompts = torch.tensor([[1, 2, 3], [4, 5, 6]])
    run = lambda seed: sample(model, prompts, 6, temperature, torch.Generator().manual_seed(seed))
    tokens, logprobs, mask = run(7)
    again = run(7)
    assert torch.equal(tokens, again.tokens) and torch.equal(logprobs, again.logprobs)
    assert not torch.equal(tokens, run(8).tokens)
    assert torch.equal(tokens[:, :3], prompts) and mask.all()
    recomputed = token_logprobs(model, tokens, temperature=temperature)[:, 2:]  # scores tokens 3..8
    assert_close(logprobs, recomputed, atol=1e-5, rtol=1e-5)


def test_sampling_with_left_padded_prompts_matches_recomputation():
    model = tiny()
    prompts = torch.tensor([[0, 1, 2], [4, 5, 6]])
    prompt_mask = torch.tensor([[False, True, True], [True, True, True]])
    tokens, logprobs, _ = sample(model, prompts, 5, 1.0, torch.Generator().manual_seed(0), prompt_mask)
    full_mask = torch.cat([prompt_mask, torch.ones(2, 5, dtype=torch.bool)], 1)
    assert_close(logprobs, token_logprobs(model, tokens, full_mask)[:, 2:], atol=1e-5, rtol=1e-5)


def test_sampling_stops_rows_at_eos():
    # token 0 always goes to 1 (prob ~1); token 1 always goes to eos=2; eos stays eos
    table = torch.full((3, 3), -30.0)
    table[0, 1] = table[1, 2] = table[2, 2] = 0.0
    tokens, logprobs, mask = sample(Bigram(table), torch.tensor([[0], [1]]), 4, 1.0, torch.Generator().manual_seed(0), eos_id=2)
    assert tokens.tolist() == [[0, 1, 2, 2, 2], [1, 2, 2, 2, 2]]
    assert mask.tolist() == [[True, True, False, False], [True, False, False, False]]
    assert_close(logprobs, torch.zeros(2, 4), atol=1e-6, rtol=0)


def test_one_policy_step_raises_the_rewarded_sequence_likelihood():
    model = tiny()
    tokens, old, mask = sample(model, torch.tensor([[1, 2], [1, 2]]), 5, 1.0, torch.Generator().manual_seed(0))
    adv = torch.tensor([[1.0], [-1.0]])
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    lp = token_logprobs(model, tokens)[:, 1:]
    policy_loss(PolicyInputs(lp, old, adv, mask), PolicyLossConfig()).loss.backward()
    opt.step()
    with torch.no_grad():
        delta = (token_logprobs(model, tokens)[:, 1:] - old).sum(-1)
    assert delta[0] > 0 > delta[1]
