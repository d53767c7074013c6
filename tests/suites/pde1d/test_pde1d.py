"""pde1d: the generators, the operator's gradient, the config space, the scorer's nRMSE
by hand, and one sandboxed evaluation of the seed."""

import math

import numpy as np
import pytest

from suites.executors.subprocess import SubprocessExecutor
from suites.pde1d.data import advection, burgers, sine_coefficients, trajectories
from suites.pde1d.operator import loss_and_grad, pretrain, rollout
from suites.pde1d.space import CONFIG_SPACE, config_space_rows, validate_config
from suites.pde1d.suite import FLOOR, RUNNER_SOURCE, Pde1d, nrmse, run
from suites.registry import get_suite

SEED_CONFIG = {"lr": 0.001, "optimizer": "adam", "loss": "mse", "epochs": 50, "modes": 16, "weight_decay": 0.0}


def _tiny() -> Pde1d:
    return Pde1d(train=4, select=2, holdout=2, per_case=2)


def test_advection_is_the_initial_condition_shifted():
    c = np.stack([sine_coefficients(7)])
    # a dt = one grid spacing: every frame is the previous one rolled by one point
    frames = advection(c, 1.0, 64, 2 * np.pi / 64, 5)[0]
    for j in range(5):
        assert np.allclose(frames[j + 1], np.roll(frames[j], 1), atol=1e-12)
    # after one period (a t = 2 pi) the wave is back
    assert np.allclose(advection(c, 2.0, 64, np.pi, 1)[0, 1], frames[0], atol=1e-12)


def test_burgers_reference_converges_with_refinement():
    c = np.stack([sine_coefficients(s) for s in (1, 2)])
    finest = burgers(c, 0.01, 64, 0.1, 10, refine=32)
    errors = [np.abs(burgers(c, 0.01, 64, 0.1, 10, refine=r) - finest).max() for r in (2, 4, 8)]
    assert errors[0] > 5 * errors[1] > 50 * errors[2]  # measured 0.020, 0.0020, 1e-5
    assert errors[2] < 1e-4  # the default refine=8
    # viscosity decays the energy; |u| stays within max |u0| (maximum principle)
    energy = (finest ** 2).sum(axis=-1)
    assert np.all(np.diff(energy, axis=1) < 0)
    assert np.abs(finest).max() <= np.abs(finest[:, 0]).max() + 1e-9


def test_trajectories_are_deterministic_by_seed():
    a = trajectories("burgers", 0.05, [3, 4], 64, 0.1, 4)
    assert np.array_equal(a, trajectories("burgers", 0.05, [3, 4], 64, 0.1, 4))
    assert not np.allclose(a[0], trajectories("burgers", 0.05, [5], 64, 0.1, 4)[0])
    assert np.abs(a[:, 0]).max() <= 1.0


def test_pretraining_recovers_the_exact_advection_step():
    data = trajectories("advection", 1.5, list(range(8)), 64, 0.1, 10)
    weights = pretrain(data)
    k = np.arange(1, 5)
    assert np.allclose(weights[0, 1:5], np.exp(-1j * k * 1.5 * 0.1), atol=1e-8)
    assert np.allclose(rollout(weights, data[:, 0], 10), data[:, 1:], atol=1e-8)


def test_the_closed_form_gradient_matches_finite_differences():
    data = trajectories("burgers", 0.05, [1, 2], 64, 0.1, 3)
    x, y = data[:, :-1].reshape(-1, 64), data[:, 1:].reshape(-1, 64)
    weights = pretrain(trajectories("burgers", 0.2, [9, 10], 64, 0.1, 3))[:, :12]
    for loss in ("mse", "l1"):
        value, grad = loss_and_grad(weights, x, y, loss)
        for i, j in [(0, 1), (1, 3), (0, 7)]:
            for direction, part in ((1e-7, grad[i, j].real), (1e-7j, grad[i, j].imag)):
                moved = weights.copy()
                moved[i, j] += direction
                numeric = (loss_and_grad(moved, x, y, loss)[0] - value) / abs(direction)
                assert numeric == pytest.approx(part, rel=1e-3, abs=1e-9)


@pytest.mark.parametrize(("change", "reason"), [
    ({"lr": 100.0}, "lr=100.0 must lie in [0.0001, 10]"),
    ({"optimizer": "lbfgs"}, "optimizer='lbfgs' must be one of ['adam', 'sgd']"),
    ({"epochs": 2.5}, "epochs=2.5 must be an integer"),
    ({"modes": True}, "modes=True must be an integer"),
    ({"weight_decay": math.nan}, "weight_decay=nan must be a finite number"),
    ({"batch": 4}, "config keys must be ['lr', 'optimizer', 'loss', 'epochs', 'modes', 'weight_decay']; "
                   "missing [], unknown ['batch']"),
])
def test_an_out_of_space_config_is_refused_with_its_reason(change, reason):
    assert validate_config(SEED_CONFIG) is None
    assert validate_config({**SEED_CONFIG, **change}) == reason
    assert validate_config([1]) == "config() must return a dict, got list"


def test_config_space_rows():
    rows = config_space_rows()
    assert [r["param"] for r in rows] == [p for p, _, _ in CONFIG_SPACE]
    assert rows[0] == {"param": "lr", "kind": "float-log", "low": 1e-4, "high": 10.0, "choices": None}
    assert rows[1]["choices"] == ["adam", "sgd"] and rows[1]["low"] is None


def test_nrmse_by_hand():
    ref = np.array([[[3.0, 4.0]], [[1.0, 0.0]]])  # norms 5 and 1
    pred = np.array([[[3.0, 0.0]], [[0.0, 0.0]]])  # errors 4 and 1
    assert nrmse(pred, ref).tolist() == [0.8, 1.0]


def test_scorer_on_exact_shifted_and_bad_outputs():
    suite = _tiny()
    case = next(c for c in suite.cases() if c.split == "select")
    ref = suite.reference_frames(case)[:, 1:]
    exact = suite.score(case, {"config": SEED_CONFIG, "pred": ref.tolist()})
    assert exact.valid and exact.metrics["neg_nrmse"] == 0.0
    zeros = suite.score(case, {"config": SEED_CONFIG, "pred": np.zeros_like(ref).tolist()})
    assert zeros.metrics["nrmse"] == pytest.approx(1.0) and zeros.metrics["nrmse_final"] == pytest.approx(1.0)
    doubled = suite.score(case, {"config": SEED_CONFIG, "pred": (2 * ref).tolist()})
    assert doubled.metrics["neg_nrmse"] == pytest.approx(-1.0)
    huge = suite.score(case, {"config": SEED_CONFIG, "pred": (1e6 * ref).tolist()})
    assert huge.valid and huge.metrics["neg_nrmse"] == FLOOR
    for output, reason in [
        (None, "output must be a dict"),
        ({"invalid": "lr=100.0 must lie in [0.0001, 10]"}, "config outside the space: lr=100.0 must lie in"),
        ({"config": {**SEED_CONFIG, "loss": "huber"}, "pred": ref.tolist()}, "config outside the space: loss="),
        ({"config": SEED_CONFIG, "pred": ref[:, :3].tolist()}, "pred must be numbers of shape [2, 10, 64]"),
        ({"config": SEED_CONFIG, "pred": [["a"]]}, "pred must be numbers of shape"),
        ({"config": SEED_CONFIG, "pred": np.full_like(ref, np.nan).tolist()}, "pred holds a value that is not finite"),
    ]:
        verdict = suite.score(case, output)
        assert not verdict.valid and verdict.reason.startswith(reason) and verdict.metrics == {"neg_nrmse": FLOOR}


def test_cases_splits_and_payloads():
    suite = Pde1d()
    cases = suite.cases()
    counts = {s: sum(c.split == s for c in cases) for s in ("train", "select", "holdout")}
    assert counts == {"train": 3, "select": 7, "holdout": 20}
    seeds = [set(suite.seeds(s)) for s in ("source", "train", "select", "holdout")]
    assert sum(map(len, seeds)) == len(set().union(*seeds)) == 30 + 30 + 14 + 40
    payload = cases[0].payload
    assert np.array(payload["u0"]).shape == (2, 64) and len(payload["train_seeds"]) == 30
    assert np.array(payload["pretrained"]["re"]).shape == (2, 33)
    assert "pred" not in payload and "ref" not in payload


def test_fine_tuning_beats_the_pretrained_operator_and_a_wild_config_does_worse():
    suite = _tiny()
    select = [c for c in suite.cases() if c.split == "select"]
    no_tuning = suite.score(select[0], run(lambda: {**SEED_CONFIG, "modes": 32, "lr": 1e-4, "epochs": 1},
                                           select[0].payload))
    tuned = suite.score(select[0], run(lambda: {**SEED_CONFIG, "modes": 32, "lr": 0.01, "epochs": 100},
                                       select[0].payload))
    assert tuned.metrics["nrmse"] < 0.5 * no_tuning.metrics["nrmse"]
    diverged = suite.score(select[0], run(lambda: {**SEED_CONFIG, "optimizer": "sgd", "lr": 10.0, "epochs": 200,
                                                   "loss": "l1", "modes": 32}, select[0].payload))
    assert diverged.metrics["neg_nrmse"] <= tuned.metrics["neg_nrmse"]


def test_the_seed_in_the_sandbox_scores_what_it_scores_in_process():
    suite = _tiny()
    cases = suite.cases()
    program = suite.seed_program()
    results = SubprocessExecutor().run(program, RUNNER_SOURCE, suite.entrypoint, cases)
    assert [r.status for r in results] == ["ok"] * len(cases), [r.error for r in results]
    namespace = {}
    exec(program, namespace)
    for case, result in zip(cases, results):
        sandboxed, local = suite.score(case, result.output), suite.score(case, run(namespace["config"], case.payload))
        assert sandboxed.valid and sandboxed.metrics == pytest.approx(local.metrics, rel=1e-9)
        assert -1.0 < sandboxed.metrics["neg_nrmse"] < 0.0
    bad = SubprocessExecutor().run(program.replace("LEARNING_RATE = 0.001", "LEARNING_RATE = 50.0"), RUNNER_SOURCE,
                                   suite.entrypoint, cases[:1])
    verdict = suite.score(cases[0], bad[0].output)
    assert bad[0].status == "ok" and verdict.reason == "config outside the space: lr=50.0 must lie in [0.0001, 10]"


def test_registry_and_bad_parameters():
    suite = get_suite("pde1d", source="advection:1.0", target="burgers:0.05", select=4)
    assert suite.source == ("advection", 1.0) and suite.sizes["select"] == 4
    with pytest.raises(ValueError, match="'burgers:nu' with nu in"):
        Pde1d(target="burgers:0")
    with pytest.raises(ValueError, match="a condition is"):
        Pde1d(source="heat:1")
    with pytest.raises(ValueError, match="every split needs at least per_case=3"):
        Pde1d(select=2, per_case=3)
    assert Pde1d().normalize(-0.25) == 0.75
