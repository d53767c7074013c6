import hashlib
import json
import shutil

import numpy as np
import pytest

from suites.base import Case
from suites.data import REFERENCE_DIR, REFERENCE_SHA256, ReferenceDataError, read_verified, verify_all
from suites.lasso import DATASET_SPLITS, FLOOR, RUNNER_SOURCE, Lasso, run
from suites.lasso_data import bundled_xy, duality_gap, objective, sklearn_objective, standardise
from suites.registry import get_suite

TINY = {"dataset": "tiny", "X": [[1.0], [-1.0]], "y": [1.0, -1.0], "alpha": 0.5, "tol": 1e-6, "repeats": 2}
"""P(w) = (1 - w)^2 / 2 + |w| / 2: optimum w* = 0.5, P* = 0.375, P(0) = 0.5."""


def _solver(source: str):
    namespace = {}
    exec(source, namespace)
    return namespace["solve_lasso"]


def _cases(split: str) -> list[Case]:
    return [c for c in Lasso(repeats=2).cases() if c.split == split]


def test_duality_gap_and_objective_by_hand():
    X, y = np.array([[1.0], [-1.0]]), np.array([1.0, -1.0])
    # w = 0: r = y, X^T r = 2, n alpha = 1, c = 1/2: (0.5 * 2 * 1.25 - 0.5 * 2) / 2 = 0.125 = P(0) - P*
    assert duality_gap(X, y, np.zeros(1), 0.5) == pytest.approx(0.125, abs=1e-15)
    assert duality_gap(X, y, np.array([0.5]), 0.5) == pytest.approx(0.0, abs=1e-15)
    assert objective(X, y, np.array([0.5]), 0.5) == pytest.approx(0.375, abs=1e-15)
    assert objective(X, y, np.zeros(1), 0.5) == pytest.approx(0.5, abs=1e-15)


def test_sklearn_reference_objective_matches_the_hand_optimum():
    assert sklearn_objective(json.dumps(TINY, sort_keys=True)) == pytest.approx(0.375, abs=1e-12)


def test_exact_answer_is_valid_and_its_time_is_the_minimum():
    case = Case("tiny", "train", TINY)
    verdict = Lasso().score(case, {"w": [[0.5], [0.5]], "cpu_s": [0.004, 0.002]})
    assert verdict.valid, verdict.reason
    assert verdict.metrics["cpu_ms_min"] == pytest.approx(2.0)
    assert verdict.metrics["cpu_ms_median"] == pytest.approx(3.0)
    assert verdict.metrics["cpu_spread"] == pytest.approx(1.0)
    assert verdict.metrics["neg_log10_cpu_ms"] == pytest.approx(-np.log10(2.0))


def test_one_bad_repeat_makes_the_case_invalid():
    case = Case("tiny", "train", TINY)
    # w = 0.49: P - P* = 0.51^2 / 2 + 0.245 - 0.375 = 5e-5 = 1e-4 x P(0), far over the tolerance 1e-6
    verdict = Lasso().score(case, {"w": [[0.5], [0.49]], "cpu_s": [0.001, 0.001]})
    assert not verdict.valid
    assert verdict.reason.startswith("repeat 1: duality gap")
    assert verdict.metrics["neg_log10_cpu_ms"] == FLOOR


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (None, "output must be a dict with lists 'w' and 'cpu_s'"),
        ({"w": [[0.5]], "cpu_s": [0.1]}, "output has 1 solutions and 1 times, expected 2"),
        ({"w": [[0.5], [0.5]], "cpu_s": [0.1, -1.0]}, "cpu_s must hold finite non-negative numbers"),
        ({"w": [[0.5], [0.5, 1.0]], "cpu_s": [0.1, 0.1]}, "w[1] is not a list of 1 numbers"),
        ({"w": [[0.5], [float("nan")]], "cpu_s": [0.1, 0.1]}, "w[1] holds a value that is not finite"),
        ({"w": [[0.5], ["0.5"]], "cpu_s": [0.1, 0.1]}, "w[1] holds a value that is not a number"),
    ],
)
def test_malformed_output_is_invalid_with_a_reason(output, reason):
    verdict = Lasso().score(Case("tiny", "train", TINY), output)
    assert not verdict.valid
    assert verdict.reason == reason
    assert verdict.metrics == {"neg_log10_cpu_ms": FLOOR}


def test_seed_is_valid_on_every_search_and_holdout_case():
    suite, solve = Lasso(repeats=2), _solver(Lasso().seed_program())
    for case in suite.cases():
        verdict = suite.score(case, run(solve, case.payload))
        assert verdict.valid, (case.case_id, verdict.reason)
        assert verdict.metrics["gap"] <= 1e-6 and verdict.metrics["excess"] <= 1e-6


def test_zeros_are_fast_but_invalid():
    suite = Lasso(repeats=2)
    for case in _cases("select"):
        verdict = suite.score(case, run(lambda X, y, alpha, tol: np.zeros(X.shape[1]), case.payload))
        assert not verdict.valid
        assert "duality gap" in verdict.reason


def test_early_stopping_and_a_loose_tolerance_are_invalid():
    suite, seed = Lasso(repeats=1), Lasso().seed_program()
    early = _solver(seed.replace("MAX_EPOCHS = 100000", "MAX_EPOCHS = 2"))
    loose = _solver(seed.replace("TOL_SCALE = 1.0", "TOL_SCALE = 1000.0"))
    case = next(c for c in _cases("select") if c.case_id == "breast_cancer/a0.03")
    for solve in (early, loose):
        verdict = suite.score(case, run(solve, case.payload))
        assert not verdict.valid and "exceeds the tolerance 1e-06" in verdict.reason


def test_every_knob_switched_on_stays_valid():
    seed = Lasso().seed_program()
    for old, new in [("SHUFFLE = 0", "SHUFFLE = 1"), ("USE_GRAM = 0", "USE_GRAM = 1"), ("SCREEN = 0", "SCREEN = 1"),
                     ("ACTIVE_SWEEPS = 0", "ACTIVE_SWEEPS = 3"), ("PATH_STEPS = 1", "PATH_STEPS = 4"),
                     ("GAP_EVERY = 1", "GAP_EVERY = 5")]:
        assert old in seed
        solve, suite = _solver(seed.replace(old, new)), Lasso(repeats=1)
        for case in _cases("train"):
            verdict = suite.score(case, run(solve, case.payload))
            assert verdict.valid, (new, case.case_id, verdict.reason)


def test_runner_source_is_self_contained():
    namespace = {}
    exec(RUNNER_SOURCE, namespace)
    output = namespace["run"](lambda X, y, alpha, tol: np.array([1.0 - alpha]), TINY)
    assert output["w"] == [[0.5], [0.5]] and len(output["cpu_s"]) == 2


def test_splits_are_whole_datasets_and_disjoint():
    cases = Lasso().cases()
    by_split = {}
    for case in cases:
        by_split.setdefault(case.split, set()).add(case.payload["dataset"])
    assert by_split == {"train": {"diabetes", "gen_wide"}, "select": {"breast_cancer", "gen_corr"},
                        "holdout": {"wine", "gen_holdout"}}
    assert [c.case_id for c in cases][:3] == ["diabetes/a0.3", "diabetes/a0.1", "diabetes/a0.03"]
    assert len(cases) == 3 * len(DATASET_SPLITS) == len({c.case_id for c in cases})


def test_bundled_datasets_have_their_published_shapes_and_are_standardised():
    shapes = {name: bundled_xy(name)[0].shape for name in ("diabetes", "breast_cancer", "wine")}
    assert shapes == {"diabetes": (442, 10), "breast_cancer": (569, 30), "wine": (178, 12)}
    X, y = standardise(*bundled_xy("diabetes"))
    assert np.allclose(X.mean(axis=0), 0, atol=1e-12) and np.allclose(X.std(axis=0), 1)
    assert bundled_xy("diabetes")[1][:2].tolist() == [151.0, 75.0]


def test_data_files_are_pinned_and_a_changed_file_is_refused(tmp_path):
    assert verify_all("lasso/") == 4 == Lasso().check_data()
    name = "lasso/wine_data.csv"
    assert hashlib.sha256((REFERENCE_DIR / name).read_bytes()).hexdigest() == REFERENCE_SHA256[name]
    (tmp_path / "lasso").mkdir()
    shutil.copy(REFERENCE_DIR / name, tmp_path / name)
    with open(tmp_path / name, "ab") as handle:
        handle.write(b"\n")
    with pytest.raises(ReferenceDataError, match="has sha256"):
        read_verified(name, root=tmp_path)


def test_registry_and_bad_parameters():
    suite = get_suite("lasso", tol=1e-5, repeats=3)
    assert (suite.tol, suite.repeats) == (1e-5, 3)
    with pytest.raises(ValueError, match="repeats must be an integer in 1..50"):
        Lasso(repeats=0)
    with pytest.raises(ValueError, match="tol must be a number"):
        Lasso(tol=0.5)
    assert Lasso().normalize(0.0) == 1.0 and Lasso().normalize(-1.0) == pytest.approx(0.1)
