import torch
from torch import nn

from suites.arith.episodes import Episode, batch, episodes, play, teacher_example, transcript
from suites.arith.tasks import solve_chain, split_of
from suites.arith.tokenizer import EOS, SEP, Tokenizer

TOK = Tokenizer()
EPISODE = Episode.of(solve_chain(12, (("+", 7), ("*", 3), ("-", 5))))


class ChainOracle(nn.Module):
    """Answers each turn with a scripted text keyed by the episode's opening; the
    turn index is the number of <sep> seen minus one."""

    def __init__(self, script: dict[str, list[str]]):
        super().__init__()
        self.script = script
        self.anchor = nn.Parameter(torch.zeros(()))

    def forward(self, tokens, mask=None):
        logits = torch.full((*tokens.shape, TOK.vocab_size), -50.0)
        for b, row in enumerate(tokens.tolist()):
            real = row if mask is None else [t for t, m in zip(row, mask[b].tolist()) if m]
            opening = TOK.decode(real[: real.index(SEP)])
            turn = real.count(SEP) - 1
            written = len(real) - 1 - max(i for i, t in enumerate(real) if t == SEP)
            ids = TOK.encode_completion(self.script[opening][turn])
            logits[b, -1, ids[min(written, len(ids) - 1)]] = 50.0
        return logits


def test_episode_values_steps_and_observations():
    assert EPISODE.n_turns == 3
    assert [EPISODE.value(k) for k in range(3)] == [19, 57, 52]
    assert EPISODE.opening() == "12+7"
    assert [EPISODE.observation(k) for k in (1, 2)] == ["*3", "-5"]
    assert EPISODE.step(1).target("worked") == "19*3=57#57"
    assert EPISODE.step(2).target("answer") == "52"


def test_per_turn_verifier_checks_the_true_running_value():
    assert EPISODE.check_turn(0, "19")
    assert EPISODE.check_turn(1, "19*3=57#57")
    assert not EPISODE.check_turn(1, "60")
    assert not EPISODE.check_turn(2, "55")  # 60-5 follows a wrong turn: still wrong


def test_transcript_layout_turn_ids_and_observations():
    ids, mask = teacher_example(TOK, EPISODE, "answer")
    assert TOK.render(ids) == "<bos>12+7<sep>19<eos><obs>*3<sep>57<eos><obs>-5<sep>52<eos>"
    assert "".join(TOK.vocab[i] for i, m in zip(ids, mask) if m) == "19<eos>57<eos>52<eos>"
    partial, turn_ids, obs = transcript(TOK, EPISODE, [TOK.encode_completion("19")])
    assert TOK.render(partial) == "<bos>12+7<sep>19<eos><obs>*3<sep>"
    assert turn_ids == [-1] * 6 + [0, 0, 0] + [-1] * 4
    assert obs == [False] * 9 + [True] * 4


def test_batch_marks_turns_and_verdicts():
    turns = [[TOK.encode_completion("19"), TOK.encode_completion("60")]]
    played = batch(TOK, [EPISODE], turns)
    assert played.turn_correct == [[True, False]]
    assert played.success == [False]
    assert TOK.render(played.tokens[0][played.mask[0]]) == "<bos>12+7<sep>19<eos><obs>*3<sep>60<eos>"
    assert played.turn_ids[0].tolist() == [-1] * 6 + [0, 0, 0] + [-1] * 4 + [1, 1, 1]
    assert played.is_obs[0].sum() == 4


def test_play_runs_every_turn_with_an_oracle():
    eps = episodes(6, seed=0)
    oracle = ChainOracle({e.opening(): [str(e.value(k)) for k in range(e.n_turns)] for e in eps})
    played = play(oracle, TOK, eps, max_turn_tokens=6)
    assert played.success == [True] * 6
    assert [len(v) for v in played.turn_correct] == [e.n_turns for e in eps]


def test_play_reuses_a_prefix_and_honours_stop():
    oracle = ChainOracle({"12+7": ["19", "99", "52"]})
    reused = play(oracle, TOK, [EPISODE], reuse=[[TOK.encode_completion("19"), TOK.encode_completion("57")]])
    assert reused.turn_correct == [[True, True, True]] and reused.success == [True]
    stopped = play(oracle, TOK, [EPISODE], stop=lambda b: [len(t) >= 2 for t in b.turns])
    assert stopped.turn_correct == [[True, False]]


def test_a_turn_without_eos_ends_the_episode():
    oracle = ChainOracle({"12+7": ["1999999", "57", "52"]})
    played = play(oracle, TOK, [EPISODE], max_turn_tokens=3)
    assert len(played.turns[0]) == 1 and EOS not in played.turns[0][0]
    assert played.success == [False]


def test_episodes_are_deterministic_and_respect_splits():
    assert episodes(5, 1) == episodes(5, 1)
    assert all(split_of(e.problem.prompt) == "holdout" for e in episodes(5, 1, "holdout"))
