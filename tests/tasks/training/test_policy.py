"""The pure GRPO step of the grpo loop on hand-built batches (no store, no Prefect)."""

import pytest
import torch
from pydantic import ValidationError

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM, token_logprobs
from schemas.post_training import GRPOConfig
from suites.arith.lm import from_bytes
from tasks.training.policy import (
    Batch,
    drop_rollouts,
    group_advantages,
    load_checkpoint,
    make_optimizer,
    policy_update,
    save_checkpoint,
)

torch.set_num_threads(1)
P, N = 3, 4


def tiny_model(seed: int = 0) -> TinyLM:
    torch.manual_seed(seed)
    from suites.arith.tokenizer import Tokenizer

    return TinyLM(TinyLMConfig(vocab_size=Tokenizer().vocab_size, d_model=16, n_layers=1, n_heads=2, max_len=16))


def hand_batch(model: TinyLM, outcomes: list[list[float]], rewards: list[list[float]] | None = None,
               lengths: list[int] | None = None) -> Batch:
    """G groups of n rows of random tokens; generation masks cut at `lengths`; old
    log-probs are the model's own (on-policy)."""
    G, n = len(outcomes), len(outcomes[0])
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(8, model.cfg.vocab_size, (G * n, P + N), generator=gen)
    lengths = lengths or [N] * (G * n)
    gen_mask = torch.arange(N)[None, :] < torch.tensor(lengths)[:, None]
    mask = torch.cat([torch.ones(G * n, P, dtype=torch.bool), gen_mask], 1)
    with torch.no_grad():
        old = token_logprobs(model, tokens, mask)[:, P - 1 :]
    out = torch.tensor(outcomes, dtype=torch.float64)
    return Batch(tokens, mask, P, old, gen_mask, out, out if rewards is None else torch.tensor(rewards, dtype=torch.float64))


def sequence_logprobs(model: TinyLM, batch: Batch) -> torch.Tensor:
    with torch.no_grad():
        return token_logprobs(model, batch.tokens, batch.mask)[:, P - 1 :].sum(-1)


def test_equal_rewards_give_zero_advantages_zero_gradient_and_no_change():
    model = tiny_model()
    cfg = GRPOConfig(group_filter="none", lr=1e-2)
    batch = hand_batch(model, [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    advantages, kept = group_advantages(batch, cfg)
    assert torch.equal(advantages, torch.zeros(6, 1, dtype=advantages.dtype)) and kept.all()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = make_optimizer(model, cfg.lr)
    loss, metrics = policy_update(model, optimizer, batch, cfg)
    assert loss == 0.0 and metrics["grad_norm"] == 0.0
    assert all(p.grad is None or torch.count_nonzero(p.grad) == 0 for p in model.parameters())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert metrics["accuracy"] == 0.5 and metrics["kept_groups"] == 1.0 and metrics["entropy"] > 0


def test_rewarded_rollout_gains_probability_and_unrewarded_ones_lose_it():
    for advantage in ("grpo", "dr_grpo"):
        model = tiny_model()
        cfg = GRPOConfig(advantage=advantage, lr=1e-2)
        batch = hand_batch(model, [[1.0, 0.0, 0.0, 0.0]])
        before = sequence_logprobs(model, batch)
        loss, metrics = policy_update(model, make_optimizer(model, cfg.lr), batch, cfg)
        after = sequence_logprobs(model, batch)
        assert metrics["grad_norm"] > 0 and metrics["kept_groups"] == 1.0
        assert after[0] > before[0] and (after[1:] < before[1:]).all(), advantage


def test_outcome_filter_drops_all_wrong_group_that_shaped_filter_keeps():
    model = tiny_model()
    outcomes = [[0.0, 0.0], [1.0, 0.0]]
    shaped = [[-0.05, -0.1], [0.95, -0.1]]  # the all-wrong group differs only in length
    batch = hand_batch(model, outcomes, shaped, lengths=[2, 4, 2, 4])
    _, kept_outcome = group_advantages(batch, GRPOConfig(reward="shaped", group_filter="outcome"))
    adv_shaped, kept_shaped = group_advantages(batch, GRPOConfig(reward="shaped", group_filter="shaped"))
    assert kept_outcome.tolist() == [False, True] and kept_shaped.tolist() == [True, True]
    assert abs(float(adv_shaped[0])) > 0.9  # a phantom advantage: full size, from length alone
    _, metrics = policy_update(model, make_optimizer(model, 1e-3), batch, GRPOConfig(reward="shaped", group_filter="shaped"))
    assert metrics["kept_all_fail"] == 0.5  # of the two kept groups, one never answers correctly


def test_dropped_groups_take_no_optimizer_step():
    model = tiny_model()
    cfg = GRPOConfig(group_filter="outcome", lr=1e-2)
    batch = hand_batch(model, [[0.0, 0.0], [1.0, 1.0]])
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = make_optimizer(model, cfg.lr)
    _, metrics = policy_update(model, optimizer, batch, cfg)
    assert metrics["kept_groups"] == 0.0 and not optimizer.state
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_checkpoint_round_trips_weights_optimizer_and_step():
    model = tiny_model()
    cfg = GRPOConfig(lr=1e-2)
    optimizer = make_optimizer(model, cfg.lr)
    policy_update(model, optimizer, hand_batch(model, [[1.0, 0.0]]), cfg)
    data = save_checkpoint(model, optimizer, 7)
    loaded, opt2, step = load_checkpoint(data, cfg.lr, torch.device("cpu"))
    assert step == 7
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values()))
    state = next(iter(optimizer.state.values()))
    state2 = next(iter(opt2.state.values()))
    assert torch.equal(state["exp_avg"], state2["exp_avg"])
    plain, meta = from_bytes(data)
    assert meta["step"] == 7 and torch.equal(plain.tok.weight, model.tok.weight)


def one_token_batch(model: TinyLM, outcomes: list[float], old_logprobs: list[float]) -> Batch:
    """One group of one-token rollouts whose sampling log-probs are set by hand."""
    batch = hand_batch(model, [outcomes])
    old = torch.tensor(old_logprobs)[:, None]  # (B, 1)
    gen_mask = torch.ones(len(outcomes), 1, dtype=torch.bool)
    mask = torch.cat([torch.ones(len(outcomes), P, dtype=torch.bool), gen_mask], 1)
    return Batch(batch.tokens[:, : P + 1], mask, P, old, gen_mask, batch.outcomes, batch.rewards)


def test_grpo_dropout_drops_the_likely_positive_rollout_and_recentres_the_rest():
    model = tiny_model()
    # GRPO advantages of [1, 1, 0, 0] are [1, 1, -1, -1]; rollout 0 is the likely correct one
    batch = one_token_batch(model, [1.0, 1.0, 0.0, 0.0], [-0.1, -2.0, -1.0, -1.0])
    cfg = GRPOConfig(group_filter="none", dropout=True, group_size=4)
    advantages, _ = group_advantages(batch, cfg)
    centred, used = drop_rollouts(batch, advantages, cfg)
    assert used.tolist() == [False, True, True, True]
    # centre = sum_kept softmax(log pi_old) * A over rows 1..3 = (e^-2 - 2 e^-1) / (e^-2 + 2 e^-1)
    centre = (0.135335283 - 2 * 0.367879441) / (0.135335283 + 2 * 0.367879441)  # -0.689276
    expected = torch.tensor([0.0, 1.0 - centre, -1.0 - centre, -1.0 - centre], dtype=centred.dtype)[:, None]
    torch.testing.assert_close(centred, expected, atol=1e-5, rtol=0)
    plain, kept_all = drop_rollouts(batch, advantages, GRPOConfig(group_filter="none"))
    assert kept_all.all() and torch.equal(plain, advantages)
    _, metrics = policy_update(model, make_optimizer(model, 1e-3), batch, cfg)
    assert metrics["dropped_frac"] == 0.25 and metrics["entropy"] > 0


def test_dropout_that_would_empty_a_group_is_refused_by_name():
    with pytest.raises(ValidationError, match="dropout_n_drop=4 .* group_size=4"):
        GRPOConfig(dropout=True, dropout_n_drop=4, group_size=4)
