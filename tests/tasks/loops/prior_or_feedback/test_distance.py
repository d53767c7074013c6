import math

import pytest

from suites.pde1d.space import CONFIG_SPACE
from tasks.loops.prior_or_feedback.distance import config_distance, param_distance, permuted, rank_in_pool

BASE = {"lr": 1e-3, "optimizer": "adam", "loss": "mse", "epochs": 51, "modes": 16, "weight_decay": 0.0}


def test_distance_is_zero_to_itself_and_one_sixth_for_one_categorical_change():
    assert config_distance(CONFIG_SPACE, BASE, BASE) == 0.0
    assert config_distance(CONFIG_SPACE, BASE, {**BASE, "optimizer": "sgd"}) == pytest.approx(1 / 6)


def test_distance_by_hand_on_each_kind():
    # lr: one decade of five (1e-4..10); epochs 51 -> 150: 99 / 199; weight decay 0 -> 0.05: half
    other = {**BASE, "lr": 1e-2, "epochs": 150, "weight_decay": 0.05}
    expected = (1 / 5 + 99 / 199 + 0.5) / 6
    assert config_distance(CONFIG_SPACE, BASE, other) == pytest.approx(expected)
    assert param_distance("float-log", (1e-4, 10.0), 1e-4, 10.0) == pytest.approx(1.0)


def test_distance_is_symmetric_and_at_most_one():
    far = {"lr": 10.0, "optimizer": "sgd", "loss": "l1", "epochs": 200, "modes": 32, "weight_decay": 0.1}
    near = {"lr": 1e-4, "optimizer": "adam", "loss": "mse", "epochs": 1, "modes": 1, "weight_decay": 0.0}
    assert config_distance(CONFIG_SPACE, far, near) == pytest.approx(1.0)
    assert config_distance(CONFIG_SPACE, far, BASE) == config_distance(CONFIG_SPACE, BASE, far)


def test_rank_counts_strictly_better_pool_scores():
    pool = [0.3, 0.1, 0.2, 0.5]
    assert rank_in_pool(0.05, pool) == (1, 0.0)
    assert rank_in_pool(0.2, pool) == (2, 0.25)
    assert rank_in_pool(0.9, pool) == (5, 1.0)


def test_permutation_moves_some_score_keeps_the_multiset_and_is_seeded():
    values = [0.3, 0.1, 0.2]
    for seed in range(20):
        out = permuted(values, seed)
        assert out != values and sorted(out) == sorted(values)
    assert permuted(values, "s") == permuted(values, "s")
    assert permuted([0.2, 0.2], 0) == [0.2, 0.2]
    assert not math.isnan(sum(permuted(values, 1)))
