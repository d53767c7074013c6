"""HarnessBandit's scheduler on hand-built statistics: probabilities (fused score +
visit bonus, softmax, floor), the choice each scheduler makes, window min-max fusion,
transferability against the other harnesses' EMAs, and the state's round trip."""

import math

import pytest

from schemas.post_training import HarnessBanditConfig
from tasks.loops.harness_bandit.bandit import (
    SchedulerState,
    choose_harness,
    harness_probs,
    minmax,
    record,
    transferability,
)


def config(**overrides) -> HarnessBanditConfig:
    return HarnessBanditConfig(**{**dict(harnesses=("add", "sub"), bonus=0.5, floor=0.1, temperature=0.2), **overrides})


def test_probabilities_on_hand_built_statistics():
    state = SchedulerState(visits=[3, 1], scores=[0.2, 0.8], emas=[None, None])
    probs, bonus = harness_probs(state, config(), step=4)
    # bonus_h = 0.5 sqrt(ln 5 / (visits_h + 1)); p = 0.1 / 2 + 0.9 softmax((score + bonus) / 0.2)
    assert bonus == pytest.approx([0.3171591, 0.4485306], abs=1e-6)
    assert probs == pytest.approx([0.0726475, 0.9273525], abs=1e-6)


def test_unvisited_harness_is_optimistic_and_floor_keeps_everyone():
    state = SchedulerState(visits=[5, 0, 5], scores=[0.4, None, 0.6], emas=[None] * 3)
    hb = config(harnesses=("add", "sub", "rev"), bonus=0.0, floor=0.3, temperature=0.1)
    probs, _ = harness_probs(state, hb, step=10)
    weights = [math.exp((v - 1.0) / 0.1) for v in (0.4, 1.0, 0.6)]
    assert probs == pytest.approx([0.1 + 0.7 * w / sum(weights) for w in weights])
    assert min(probs) >= 0.1 and sum(probs) == pytest.approx(1.0)


def test_each_scheduler_makes_the_hand_computed_choice():
    state = SchedulerState(visits=[2, 2, 2], scores=[0.9, 0.1, 0.3], emas=[None] * 3)
    greedy = config(harnesses=("add", "sub", "rev"), floor=0.0, temperature=0.01)
    assert all(choose_harness(state, greedy, seed, 7)[0] == 0 for seed in range(20))
    robin = greedy.model_copy(update={"scheduler": "round_robin"})
    assert [choose_harness(state, robin, 0, s)[0] for s in range(5)] == [0, 1, 2, 0, 1]
    uniform = greedy.model_copy(update={"scheduler": "uniform"})
    picks = [choose_harness(state, uniform, 0, s)[0] for s in range(300)]
    assert picks == [choose_harness(state, uniform, 0, s)[0] for s in range(300)]
    assert all(60 < picks.count(h) < 140 for h in range(3))
    assert choose_harness(state, uniform, 0, 0)[1] == pytest.approx([1 / 3] * 3)


def test_record_fuses_over_the_window_and_updates_the_ema():
    state = SchedulerState(visits=[1, 0], scores=[0.5, None], emas=[[1.0, 0.0], None],
                           window=[[0.1, -0.5], [0.3, 0.5]])
    signals = record(state, config(ema_rate=0.3, learn_weight=0.5), 0, [0.0, 1.0], 0.25, 0.3)
    assert signals == pytest.approx({"learn_n": 0.75, "transfer_n": 0.8, "fused": 0.775})
    assert state.emas[0] == pytest.approx([0.7, 0.3]) and state.visits == [2, 0] and state.scores[0] == 0.775
    record(state, config(window=2), 1, [2.0, 0.0], 0.0, 0.0)
    assert state.window == [[0.25, 0.3], [0.0, 0.0]] and state.emas[1] == [2.0, 0.0] and state.scores[1] == 0.0


def test_transferability_reads_only_the_other_harnesses():
    state = SchedulerState(visits=[1, 1, 0], scores=[0.0, 0.0, None], emas=[[1.0, 0.0], [0.0, 1.0], None])
    assert transferability(state, 0, [1.0, 1.0]) == pytest.approx(1 / math.sqrt(2))
    assert transferability(state, 2, [1.0, 1.0]) == pytest.approx(1.0)
    assert transferability(SchedulerState.fresh(2), 0, [1.0, 1.0]) == 0.0
    assert minmax(3.0, [3.0, 3.0]) == 0.5


def test_state_round_trips_through_checkpoint_meta():
    state = SchedulerState(visits=[1, 2], scores=[0.5, None], emas=[[0.1, 0.2], None], window=[[0.3, 0.4]])
    assert SchedulerState.from_meta(state.to_meta()) == state
