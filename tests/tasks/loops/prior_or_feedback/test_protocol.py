import pytest

from suites.pde1d.space import validate_config
from tasks.loops.prior_or_feedback.proposers import prior_config, propose
from tasks.loops.prior_or_feedback.protocol import chosen, replay, search, sensitivity

TASK = {"source": ("burgers", 0.1), "target": ("burgers", 0.02)}
CROSS = {"source": ("advection", 1.0), "target": ("burgers", 0.05)}


def toy_score(config: dict) -> float:
    """A hand-made landscape: best at lr = 1e-2, adam, mse, many epochs."""
    import math

    return (abs(math.log10(config["lr"]) + 2) + (config["optimizer"] != "adam") + (config["loss"] != "mse")
            + (200 - config["epochs"]) / 200)


def test_prior_reads_the_descriptor():
    within, cross = prior_config(TASK), prior_config(CROSS)
    assert within["lr"] == 3e-3 * (1 + abs(__import__("math").log(0.02 / 0.1)))
    assert within["modes"] == 32 and cross["modes"] == 16
    assert cross["lr"] == pytest.approx(9e-3) and cross["epochs"] == 150
    assert validate_config(within) is None and validate_config(cross) is None


def test_every_proposal_is_valid_and_a_pure_function_of_its_arguments():
    trials = search("prior", TASK, 0, 6, toy_score, startup=3)
    history = [(r["config"], r["val_nrmse"]) for r in trials]
    for proposer in ("random", "tpe", "prior"):
        a = propose(proposer, TASK, history, 7, 7, startup=3)
        assert validate_config(a) is None
        assert propose(proposer, TASK, history, 7, 7, startup=3) == a


def test_prior_local_search_moves_one_parameter_of_the_best_so_far():
    best = {"lr": 1e-2, "optimizer": "adam", "loss": "mse", "epochs": 120, "modes": 16, "weight_decay": 0.0}
    worse = {**best, "optimizer": "sgd"}
    for seed in range(10):
        out = propose("prior", TASK, [(worse, 0.5), (best, 0.1)], seed, 3)
        assert sum(out[k] != best[k] for k in best) == 1


def test_random_ignores_feedback_and_prior_reacts_to_permuted_scores():
    trials = search("prior", TASK, 0, 8, toy_score, startup=3)
    rnd = replay("random", TASK, 0, search("random", TASK, 0, 8, toy_score, 3), [4, 8], 2, 3)
    assert all(r["norm_distance"] == 0 for r in rnd if r["intervention"] == "permuted")
    assert all(r["norm_distance"] > 0 for r in rnd if r["intervention"] == "control")
    assert sensitivity(rnd) < 0
    rows = replay("prior", TASK, 0, trials, [2, 4, 8, 9], 2, 3, descriptions=[CROSS])
    assert sorted({r["t"] for r in rows}) == [1, 4, 8]  # 2: one score, nothing to permute; 9: no trial 9
    assert [r["intervention"] for r in rows if r["t"] == 1] == ["cold_start"]
    assert any(r["norm_distance"] > 0 for r in rows if r["intervention"] == "permuted")


def test_replay_with_the_recorded_scores_and_seed_reproduces_the_trial():
    trials = search("tpe", TASK, 3, 6, toy_score, startup=3)
    history = [(r["config"], r["val_nrmse"]) for r in trials[:5]]
    assert propose("tpe", TASK, history, 3, 6, startup=3) == trials[5]["config"]


def test_chosen_is_the_earliest_best_validation_trial():
    trials = [{"t": 1, "val_nrmse": 0.2}, {"t": 2, "val_nrmse": 0.1}, {"t": 3, "val_nrmse": 0.1}]
    assert chosen(trials)["t"] == 2
    assert sensitivity([{"intervention": "permuted", "norm_distance": 0.3},
                        {"intervention": "control", "norm_distance": 0.1}]) == 0.3 - 0.1
    assert sensitivity([]) is None
