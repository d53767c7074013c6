import json
import math

import numpy as np
import pytest

from suites.base import Case
from suites.circle_packing import BEST_KNOWN, CirclePacking, best_known, run
from suites.data import read_verified
from suites.registry import get_suite

ALPHAEVOLVE_SHA256 = "812c10af2f2e59d58c9da272d30d9a47612ed1e271ebc9352ff86656f7051597"


def _alphaevolve() -> dict:
    raw = read_verified(
        "circle_packing/alphaevolve_constructions.json", ALPHAEVOLVE_SHA256
    )
    return json.loads(raw)


def _case(n: int) -> Case:
    return Case(f"n{n}-train", "train", {"n": n})


def _two_circles(c0, c1, r0, r1) -> dict:
    return {"centers": [list(c0), list(c1)], "radii": [r0, r1]}


@pytest.mark.parametrize(("n", "published"), [(26, 2.6359830849), (32, 2.9395727712)])
def test_alphaevolve_constructions_validate_and_score_the_record(n, published):
    record = _alphaevolve()[str(n)]
    output = {"centers": record["centers"], "radii": record["radii"]}
    verdict = CirclePacking().score(_case(n), output)
    assert verdict.valid, verdict.reason
    assert verdict.metrics["sum_radii"] == pytest.approx(published, abs=1e-9)
    assert verdict.metrics["sum_radii"] == pytest.approx(BEST_KNOWN[n], abs=1e-12)
    assert verdict.metrics["ratio_to_best"] == pytest.approx(1.0, abs=1e-12)
    assert BEST_KNOWN[n] == record["sum_of_radii"]


@pytest.mark.parametrize("n", [26, 32])
def test_alphaevolve_constructions_need_no_tolerance(n):
    record = _alphaevolve()[str(n)]
    output = {"centers": record["centers"], "radii": record["radii"]}
    assert CirclePacking(tolerance=0.0).score(_case(n), output).valid


def test_touching_circles_are_valid_and_sum_exactly():
    output = _two_circles((0.25, 0.5), (0.75, 0.5), 0.25, 0.25)
    verdict = CirclePacking(tolerance=0.0).score(_case(2), output)
    assert verdict.valid
    assert verdict.metrics == {"sum_radii": 0.5}


def test_overlap_within_tolerance_is_accepted_beyond_it_rejected():
    within = _two_circles((0.3, 0.5), (0.75, 0.5), 0.25, 0.2 + 5e-10)
    beyond = _two_circles((0.3, 0.5), (0.75, 0.5), 0.25, 0.2 + 5e-9)
    suite = CirclePacking()
    assert suite.score(_case(2), within).valid
    verdict = suite.score(_case(2), beyond)
    assert not verdict.valid
    assert verdict.reason == "circles 0 and 1 overlap by 5e-09"


def test_overlap_names_the_worst_pair():
    output = {
        "centers": [[0.2, 0.2], [0.8, 0.8], [0.2, 0.6], [0.7, 0.8]],
        "radii": [0.1, 0.1, 0.1, 0.05],
    }
    verdict = CirclePacking().score(_case(4), output)
    assert not verdict.valid
    assert verdict.reason == "circles 1 and 3 overlap by 0.05"
    assert verdict.metrics == {"sum_radii": 0.0}


@pytest.mark.parametrize(
    ("center", "radius", "reason"),
    [
        ((0.1, 0.5), 0.2, "circle 0 crosses the left edge by 0.1"),
        ((0.9, 0.5), 0.25, "circle 0 crosses the right edge by 0.15"),
        ((0.5, 0.05), 0.1, "circle 0 crosses the bottom edge by 0.05"),
        ((0.5, 1.2), 0.1, "circle 0 crosses the top edge by 0.3"),
    ],
)
def test_circle_outside_the_square_is_invalid(center, radius, reason):
    verdict = CirclePacking().score(
        _case(1), {"centers": [list(center)], "radii": [radius]}
    )
    assert not verdict.valid
    assert verdict.reason == reason


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (None, "output must be a dict with 'centers' and 'radii', got None"),
        ("2.6", "output must be a dict with 'centers' and 'radii', got '2.6'"),
        ({"centers": [[0.5, 0.5]]}, "output must be a dict with 'centers' and 'radii'"),
        ({"centers": "abc", "radii": [0.1]}, "centers is str, not a list"),
        (
            {"centers": [[0.5, 0.5]] * 2, "radii": [0.1]},
            "centers has 2 entries, expected 1",
        ),
        ({"centers": [[0.5, 0.5, 0.5]], "radii": [0.1]}, "centers[0] has 3 entries"),
        ({"centers": [0.5], "radii": [0.1]}, "centers[0] is float, not a list"),
        ({"centers": [["0.5", 0.5]], "radii": [0.1]}, "centers[0][0] is str '0.5'"),
        ({"centers": [[True, 0.5]], "radii": [0.1]}, "centers[0][0] is bool True"),
        ({"centers": [[float("nan"), 0.5]], "radii": [0.1]}, "centers[0][0] is nan"),
        (
            {"centers": [[0.5, 0.5]], "radii": [float("inf")]},
            "radii[0] is inf, not finite",
        ),
        ({"centers": [[0.5, 0.5]], "radii": 0.1}, "radii is float, not a list"),
        (
            {"centers": [[0.5, 0.5]], "radii": [0.1, 0.1]},
            "radii has 2 entries, expected 1",
        ),
        ({"centers": [[0.5, 0.5]], "radii": [10**400]}, "too large for a float"),
        ({"centers": [[0.5, 0.5]], "radii": [None]}, "radii[0] is NoneType None"),
        (
            {"centers": [[0.5, 0.5]], "radii": [-0.1]},
            "circle 0 has radius -0.1, not positive",
        ),
        (
            {"centers": [[0.5, 0.5]], "radii": [0.0]},
            "circle 0 has radius 0, not positive",
        ),
    ],
)
def test_malformed_output_is_invalid_with_a_reason(output, reason):
    verdict = CirclePacking().score(_case(1), output)
    assert not verdict.valid
    assert reason in verdict.reason
    assert verdict.metrics == {"sum_radii": 0.0}


def test_numpy_output_is_accepted_like_plain_lists():
    output = {"centers": np.array([[0.5, 0.5]]), "radii": np.array([0.5])}
    assert CirclePacking().score(_case(1), output).metrics == {"sum_radii": 0.5}


def test_runner_returns_plain_floats():
    output = run(lambda n: (np.full((n, 2), 0.5), np.full(n, 0.25)), {"n": 2})
    assert output == {"centers": [[0.5, 0.5], [0.5, 0.5]], "radii": [0.25, 0.25]}
    assert type(output["radii"][0]) is float


def test_runner_source_is_self_contained_and_fails_on_a_non_pair():
    namespace = {}
    exec(CirclePacking().runner_source(), namespace)
    assert namespace["run"](lambda n: ([(0.5, 0.5)], (0.5,)), {"n": 1}) == {
        "centers": [[0.5, 0.5]],
        "radii": [0.5],
    }
    with pytest.raises(TypeError):
        namespace["run"](lambda n: None, {"n": 1})


def _run_seed(suite: CirclePacking, n: int):
    program, runner = {}, {}
    exec(suite.seed_program(), program)
    exec(suite.runner_source(), runner)
    return suite.score(_case(n), runner["run"](program[suite.entrypoint], {"n": n}))


def test_seed_program_is_valid_for_every_n_up_to_40():
    suite = CirclePacking(tolerance=0.0)
    for n in range(1, 41):
        verdict = _run_seed(suite, n)
        assert verdict.valid, (n, verdict.reason)


def test_seed_program_scores_well_below_the_record():
    verdict = _run_seed(CirclePacking(), 26)
    assert 1.5 < verdict.metrics["sum_radii"] < 2.3


def test_cases_splits_and_payloads():
    cases = CirclePacking().cases()
    assert [(c.case_id, c.split, c.payload) for c in cases] == [
        ("n26-train", "train", {"n": 26}),
        ("n26-select", "select", {"n": 26}),
        ("n32-holdout", "holdout", {"n": 32}),
    ]


def test_normalize_divides_by_the_best_known_for_the_suite_n():
    assert CirclePacking().normalize(BEST_KNOWN[26]) == 1.0
    assert CirclePacking(n=32).normalize(BEST_KNOWN[32] / 2) == 0.5
    assert best_known(26) == 2.6359830849176076
    with pytest.raises(ValueError, match="n=10"):
        CirclePacking(n=10).normalize(1.0)


def test_holdout_of_another_size_carries_its_own_ratio():
    verdict = _run_seed(CirclePacking(), 32)
    ratio = verdict.metrics["sum_radii"] / 2.9395727712063233
    assert math.isclose(verdict.metrics["ratio_to_best"], ratio)
    assert "ratio_to_best" not in _run_seed(CirclePacking(), 10).metrics


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"n": 0}, "n must be an integer >= 1"),
        ({"holdout_n": 2.5}, "holdout_n must be an integer >= 1"),
        ({"tolerance": -1e-9}, "tolerance must be a number in"),
    ],
)
def test_bad_parameters_are_named(params, message):
    with pytest.raises(ValueError, match=message):
        CirclePacking(**params)


def test_registry_builds_the_suite_and_names_bad_input():
    suite = get_suite("circle_packing", n=10, holdout_n=12)
    assert isinstance(suite, CirclePacking) and (suite.n, suite.holdout_n) == (10, 12)
    with pytest.raises(
        ValueError, match=r"no parameter 'size'.*\['n', 'holdout_n', 'tolerance'\]"
    ):
        get_suite("circle_packing", size=3)
    with pytest.raises(ValueError, match=r"unknown suite 'circles'; known suites: \["):
        get_suite("circles")
