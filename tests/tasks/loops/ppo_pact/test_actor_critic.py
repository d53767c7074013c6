"""The pure PPO / PACT actor-critic step of the ppo_pact loop on hand-built tensors and a
tiny random policy (no store, no Prefect)."""

import math

import pytest
import torch
from pydantic import ValidationError

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM
from schemas.post_training import PPOPACTConfig
from suites.arith import Arith
from suites.arith.tokenizer import Tokenizer
from tasks.loops.ppo_pact.actor_critic import (
    Learner,
    actor_critic_step,
    critic_logits,
    explained_variance,
    load_critic,
    make_critic,
    pact_loss,
    save_critic,
    terminal_rewards,
)
from tasks.training.policy import Batch, make_optimizer

torch.set_num_threads(1)


def one_token_batch(old_logprobs: list[float]) -> Batch:
    """Rollouts of one generated token each after a 2-token prompt (the tokens are not read)."""
    B = len(old_logprobs)
    tokens = torch.full((B, 3), 8)
    mask = torch.ones(B, 3, dtype=torch.bool)
    outcomes = torch.zeros(1, B)
    return Batch(tokens, mask, 2, torch.tensor(old_logprobs)[:, None], mask[:, 2:], outcomes, outcomes)


def test_terminal_reward_sits_on_the_last_generated_token():
    gen_mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    rewards = terminal_rewards(torch.tensor([1.0, 1.0]), gen_mask)
    assert rewards.tolist() == [[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]]


def test_pact_critic_minimiser_is_the_importance_corrected_target_on_one_token():
    # two one-token rollouts from the same state: the correct one gained probability
    # (rho = 0.48 / 0.4 = 1.2), the wrong one lost some (rho = 0.54 / 0.6 = 0.9); the
    # ratio-weighted BCE is stationary where sigmoid(z) = 1.2 / (1.2 + 0.9) = 0.5714...
    batch = one_token_batch([math.log(0.4), math.log(0.6)])
    new = torch.tensor([[math.log(0.48)], [math.log(0.54)]])
    returns = torch.tensor([[1.0], [0.0]])

    def gradient(p: float, correction: bool) -> float:
        z = torch.tensor(math.log(p / (1 - p)), requires_grad=True)
        cfg = PPOPACTConfig(critic="pact", importance_correction=correction)
        pact_loss(z.expand(2, 1), returns, returns, new, batch, cfg).loss.backward()
        return float(z.grad)

    corrected = 1.2 / 2.1
    assert abs(gradient(corrected, True)) < 1e-6 and abs(gradient(0.5, False)) < 1e-6
    assert gradient(0.5, True) < -0.01 and gradient(corrected, False) > 0.01  # each misses the other's target


def test_pact_loss_is_ratio_weighted_bce_and_masks_out_of_range_tokens():
    batch = one_token_batch([math.log(0.4), math.log(0.4)])
    new = torch.tensor([[math.log(0.44)], [math.log(0.8)]])  # rho = 1.1 (in range), 2.0 (masked)
    out = pact_loss(torch.zeros(2, 1), torch.ones(2, 1), torch.ones(2, 1), new, batch, PPOPACTConfig())
    assert abs(float(out.loss) - 1.1 * math.log(2.0)) < 1e-6  # only the first token: 1.1 * -log sigmoid(0)
    assert float(out.metrics["masked_frac"]) == 0.5


def test_explained_variance_by_hand():
    returns, mask = torch.tensor([[1.0, 0.0]]), torch.ones(1, 2, dtype=torch.bool)
    assert explained_variance(torch.tensor([[0.5, 0.5]]), returns, mask) == 0.0
    assert explained_variance(torch.tensor([[1.0, 0.0]]), returns, mask) == 1.0
    assert math.isnan(explained_variance(torch.tensor([[0.3, 0.3]]), torch.ones(1, 2), mask))


def tiny_actor() -> TinyLM:
    torch.manual_seed(0)
    return TinyLM(TinyLMConfig(vocab_size=Tokenizer().vocab_size, d_model=16, n_layers=1, n_heads=2, max_len=96))


def test_critic_starts_from_the_actor_trunk_with_zero_head_and_round_trips():
    actor = tiny_actor()
    critic = make_critic(actor)
    assert torch.equal(critic.trunk.tok.weight, actor.tok.weight)
    batch = one_token_batch([0.0, 0.0])
    assert torch.equal(critic_logits(critic, batch), torch.zeros(2, 1))
    optimizer = make_optimizer(critic, 1e-2)
    critic(batch.tokens).sum().backward()
    optimizer.step()
    loaded, opt2, step = load_critic(save_critic(critic, optimizer, 3), 1e-2, torch.device("cpu"))
    assert step == 3 and all(torch.equal(a, b) for a, b in zip(critic.parameters(), loaded.parameters()))
    assert torch.equal(next(iter(opt2.state.values()))["exp_avg"], next(iter(optimizer.state.values()))["exp_avg"])


def learner(cfg: PPOPACTConfig) -> Learner:
    actor = tiny_actor()
    critic = make_critic(actor)
    return Learner(actor, make_optimizer(actor, cfg.lr), critic, make_optimizer(critic, cfg.critic_lr))


@pytest.mark.parametrize("critic", ["ppo", "pact"])
def test_warmup_trains_only_the_critic_then_both_deterministically(critic):
    cfg = PPOPACTConfig(critic=critic, prompts_per_step=2, group_size=2, max_new_tokens=6, critic_warmup_steps=1)
    suite = Arith(categories=("add",), n_per_category=20)
    train = suite.cases("train")
    a, b = learner(cfg), learner(cfg)
    for pair in (a, b):  # a value away from the (all-wrong) outcomes, so both critic losses are non-zero
        torch.nn.init.constant_(pair.critic.head.bias, 0.3)
    actor_before = [p.detach().clone() for p in a.actor.parameters()]
    critic_before = [p.detach().clone() for p in a.critic.parameters()]
    warm = actor_critic_step(a, suite, train, cfg, 3, 0)
    assert warm.metrics["actor_updated"] == 0.0 and warm.samples == 4
    assert all(torch.equal(x, y) for x, y in zip(actor_before, a.actor.parameters()))
    assert not all(torch.equal(x, y) for x, y in zip(critic_before, a.critic.parameters()))
    hot = actor_critic_step(a, suite, train, cfg, 3, 1)
    assert hot.metrics["actor_updated"] == 1.0
    assert not all(torch.equal(x, y) for x, y in zip(actor_before, a.actor.parameters()))
    assert {"actor_loss", "critic_loss", "entropy", "explained_variance", "critic_mc_error"} <= set(hot.metrics)
    replay = [actor_critic_step(b, suite, train, cfg, 3, s).loss for s in (0, 1)]
    assert replay == [warm.loss, hot.loss]


def test_ppo_critic_with_the_pact_ablation_is_refused_by_name():
    with pytest.raises(ValidationError, match="importance_correction=False .* critic='pact'"):
        PPOPACTConfig(critic="ppo", importance_correction=False)
