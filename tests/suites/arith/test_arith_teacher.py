import random

import pytest
import torch

from kernels.configs import TinyLMConfig
from kernels.model import TinyLM
from suites.arith.lm import collate, from_bytes, sft_loss, to_bytes
from suites.arith.tasks import solve_add, solve_chain
from suites.arith.teacher import STUDENT_MODEL, TEACHER_MODEL, TeacherConfig, example_kind, make_example, train_teacher
from suites.arith.tokenizer import Tokenizer

TOK = Tokenizer()
SMALL = TinyLMConfig(vocab_size=TOK.vocab_size, d_model=32, n_layers=1, n_heads=2, max_len=96)


def test_teacher_is_larger_than_the_student():
    count = lambda cfg: sum(p.numel() for p in TinyLM(cfg).parameters())
    assert count(TEACHER_MODEL) > 4 * count(STUDENT_MODEL)


def test_examples_of_each_kind_learn_the_right_tokens():
    cfg, rng = TeacherConfig(), random.Random(0)
    learned = lambda ex: TOK.render([i for i, k in zip(*ex) if k])
    plain = make_example(cfg, "plain", solve_add(47, 85), rng, TOK)
    assert TOK.render(plain[0]) == "<bos>47+85<sep>7+5=12;4+8+1=13#132<eos>"
    assert learned(plain) == "7+5=12;4+8+1=13#132<eos>"
    hinted = make_example(cfg, "hint", solve_add(47, 85), rng, TOK)
    assert TOK.render(hinted[0]).startswith("<bos><hint>") and learned(hinted) == learned(plain)
    written = make_example(cfg, "write", solve_add(47, 85), rng, TOK)
    assert learned(written) == "47+85<eos>" and TOK.render(written[0]).startswith("<bos><write>")
    episode = make_example(cfg, "episode", solve_chain(12, (("+", 7), ("*", 3))), rng, TOK)
    assert learned(episode) == "12+7=19#19<eos>19*3=57#57<eos>"


def test_mix_shares_follow_the_config():
    cfg, rng = TeacherConfig(context_prob=0.3, write_prob=0.1, episode_prob=0.1), random.Random(0)
    kinds = [example_kind(cfg, rng) for _ in range(4000)]
    assert abs(kinds.count("hint") / 4000 - 0.3) < 0.03
    assert abs(kinds.count("write") / 4000 - 0.1) < 0.02
    no_chain = TeacherConfig(categories=("add",))
    assert "episode" not in {example_kind(no_chain, rng) for _ in range(500)}


def test_config_errors_name_the_fix():
    with pytest.raises(ValueError, match="vocab_size"):
        TeacherConfig(model=TinyLMConfig(vocab_size=32))
    with pytest.raises(ValueError, match="subset"):
        TeacherConfig(categories=("mul",))
    with pytest.raises(ValueError, match="exceeds 1"):
        TeacherConfig(context_prob=0.6, write_prob=0.3, episode_prob=0.2)


def test_sft_loss_ignores_tokens_outside_the_loss_mask():
    torch.manual_seed(0)
    model = TinyLM(SMALL)
    a = make_example(TeacherConfig(), "plain", solve_add(47, 85), random.Random(0), TOK)
    ids, keep = a
    other = ([ids[0], 9, 9, 9, 9, 9, *ids[6:]], keep)  # a different prompt, same target mask
    la, lb = sft_loss(model, *collate([a])), sft_loss(model, *collate([other]))
    assert la.item() > 0 and not torch.isclose(la, lb)
    zero_mask = collate([(ids, [False] * len(ids))])
    assert sft_loss(model, *zero_mask).item() == 0.0


def test_short_training_run_lowers_the_loss():
    cfg = TeacherConfig(model=SMALL, categories=("add", "rev"), batch_size=16, warmup=5, eval_per_category=4, eval_writes=4)
    model, metrics = train_teacher(cfg, steps=40, seed=0)
    assert metrics["loss_last"] < 0.8 * metrics["loss_first"]
    assert set(metrics["heldout_acc"]) == {"add", "rev", "all"}
    assert metrics["write"]["written"] == 4
    assert not model.training


def test_training_is_reproducible_from_the_seed():
    cfg = TeacherConfig(model=SMALL, categories=("sort",), batch_size=4, eval_per_category=0, eval_writes=0)
    assert train_teacher(cfg, 3, seed=1)[1]["loss"] == train_teacher(cfg, 3, seed=1)[1]["loss"]


def test_bytes_round_trip_keeps_config_weights_and_meta():
    torch.manual_seed(0)
    model = TinyLM(SMALL).eval()
    loaded, meta = from_bytes(to_bytes(model, {"steps": 7}))
    tokens = torch.tensor([TOK.encode_prompt("47+85")])
    assert loaded.cfg == SMALL and meta == {"steps": 7}
    torch.testing.assert_close(loaded(tokens), model(tokens))


def test_loading_refuses_another_vocabulary(monkeypatch):
    data = to_bytes(TinyLM(SMALL))
    monkeypatch.setattr(Tokenizer, "vocab", Tokenizer.vocab + ("<new>",))
    with pytest.raises(ValueError, match="different arith tokenizer vocabulary"):
        from_bytes(data)


@pytest.mark.slow
def test_teacher_reaches_90_percent_on_held_out_additions():
    """Measured on 2 shared cores: 313-337 s, held-out accuracy 1.00."""
    cfg = TeacherConfig(categories=("add",), eval_per_category=200, eval_writes=0)
    _, metrics = train_teacher(cfg, steps=1000, seed=0)
    assert metrics["heldout_acc"]["add"] >= 0.9, metrics["heldout_acc"]
