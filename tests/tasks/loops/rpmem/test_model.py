import torch

from tasks.loops.rpmem.model import RPMem, answer_logits, frozen_base, question_states
from tasks.loops.rpmem.sessions import ANSWERS, Session, user_sessions
from tasks.loops.rpmem.train import (answer_targets, batch_users, compile_loss, from_bytes, stream, to_bytes,
                                     train_steps)

KEYS = "abc"


def setup(seed=0):
    base = frozen_base("student", seed)
    torch.manual_seed(seed)
    return base, question_states(base, KEYS), RPMem(16, 32, 4)


def test_frozen_base_is_seeded_frozen_and_leaves_the_global_rng_alone():
    torch.manual_seed(7)
    before = torch.rand(1)
    torch.manual_seed(7)
    a = frozen_base("student", 1)
    assert torch.equal(torch.rand(1), before)
    b = frozen_base("student", 1)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not any(p.requires_grad for p in a.parameters())
    assert frozen_base("teacher", 1).cfg.d_model == 48


def test_untrained_decoder_leaves_the_base_unchanged():
    base, states, model = setup()
    memory = torch.randn(2, 16)
    logits = answer_logits(base, states, model.decoder(memory))  # B = 0 at init: h' = h
    from tasks.loops.rpmem.model import answer_ids
    expected = states @ base.tok.weight[answer_ids()].T
    torch.testing.assert_close(logits, expected[None].expand(2, -1, -1))


def test_memory_size_is_constant_and_gate_is_per_coordinate():
    base, states, model = setup()
    users = [user_sessions(0, "select", u, 6, 2, KEYS) for u in range(3)]
    writes, correct = stream(base, states, model, users, KEYS)
    assert correct.shape == (3, 6, 3) and len(writes) == 18
    assert all(0 < w.mean_keep < 1 and 0 < w.mean_write < 1 for w in writes)
    assert len({w.latent_hash for w in writes}) == 18  # every memory state differs; all are 16 floats
    m, keep, write = model.gate(torch.zeros(1, 16), torch.full((1, 16), 0.5))
    assert m.shape == keep.shape == write.shape == (1, 16)
    torch.testing.assert_close(m, write * torch.tanh(torch.tensor(0.5)))  # empty memory: keep has nothing to keep


def test_answer_targets_index_answers():
    s = [Session("set a 3;set c 9", (("a", "3"), ("c", "9")))]
    assert answer_targets(s, KEYS).tolist() == [[3, ANSWERS.index("n"), 9]]


def test_compile_training_lowers_the_loss_and_touches_only_its_params():
    base, states, model = setup()
    gate_before = [p.clone() for p in model.gate.parameters()]
    params = list(model.compiler.parameters()) + list(model.decoder.parameters())
    loss_of = lambda s: compile_loss(base, states, model, batch_users(0, "compile", s, 16, 1, 2, KEYS), KEYS)
    held = batch_users(0, "check", 0, 32, 1, 2, KEYS)
    first = compile_loss(base, states, model, held, KEYS).item()
    rows = train_steps(params, loss_of, 0, 40, 1e-2)
    assert [r[0] for r in rows] == list(range(40))
    assert compile_loss(base, states, model, held, KEYS).item() < first - 0.2
    assert all(torch.equal(a, b) for a, b in zip(gate_before, model.gate.parameters()))


def test_bytes_round_trip_is_content_stable():
    _, _, model = setup()
    meta = {"d_mem": 16, "d_model": 32, "rank": 4}
    data = to_bytes(model, meta)
    back, m = from_bytes(data)
    assert m == meta and to_bytes(back, meta) == data
