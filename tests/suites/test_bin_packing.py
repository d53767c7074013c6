import shutil
from pathlib import Path

import numpy as np
import pytest

import suites.data
from suites.base import Case, Verdict
from suites.bin_packing import (
    DATASET_FILES,
    SHA256,
    BinPacking,
    best_fit_priority,
    check_assignment,
    dataset_excess_pct,
    first_fit_priority,
    l1_bound,
    pack_online,
    read_instances,
)
from suites.data import REFERENCE_DIR, REFERENCE_SHA256, ReferenceDataError, read_verified, verify_all
from suites.registry import get_suite

# FunSearch (Romera-Paredes et al. 2023), Table 1: excess bins over the L1 bound, %.
FUNSEARCH_BASELINES = {
    "first_fit": {
        "or1": 6.42,
        "or2": 6.45,
        "or3": 5.74,
        "or4": 5.23,
        "weibull5k": 4.23,
    },
    "best_fit": {"or1": 5.81, "or2": 6.06, "or3": 5.37, "or4": 4.94, "weibull5k": 3.98},
}
PRIORITIES = {"first_fit": first_fit_priority, "best_fit": best_fit_priority}


def _small_case(items, capacity=10) -> Case:
    return Case(
        "toy/t0", "train", {"dataset": "toy", "capacity": capacity, "items": items}
    )


def _excess_by_dataset(suite: BinPacking, priority) -> dict[str, float]:
    verdicts = {}
    for case in suite.cases():
        items, capacity = case.payload["items"], case.payload["capacity"]
        output = {"assignment": pack_online(items, capacity, priority)}
        verdicts[case.case_id] = suite.score(case, output)
    return dataset_excess_pct(verdicts)


@pytest.mark.parametrize("heuristic", ["first_fit", "best_fit"])
def test_funsearch_baselines_reproduce_to_two_decimals(heuristic):
    excess = _excess_by_dataset(BinPacking(), PRIORITIES[heuristic])
    assert {d: round(v, 2) for d, v in excess.items()} == FUNSEARCH_BASELINES[heuristic]


def test_runner_source_and_seed_program_pack_as_best_fit():
    suite = BinPacking(datasets=["or1"])
    runner, program = {}, {}
    exec(suite.runner_source(), runner)
    exec(suite.seed_program(), program)
    for case in suite.cases()[:4]:
        output = runner["run"](program[suite.entrypoint], case.payload)
        items, capacity = case.payload["items"], case.payload["capacity"]
        assert output == {"assignment": pack_online(items, capacity, best_fit_priority)}
        assert suite.score(case, output).valid


def test_first_fit_and_best_fit_differ_where_they_should():
    # 5 -> bin 0 (5 left); 7 -> bin 1 (3 left); 2 fits both.
    assert pack_online([5, 7, 2], 10, first_fit_priority) == [0, 1, 0]
    assert pack_online([5, 7, 2], 10, best_fit_priority) == [0, 1, 1]


def test_priority_sees_only_fitting_bins_in_opening_order():
    seen = []

    def spy(item, bins):
        seen.append((item, bins.tolist()))
        return np.zeros(len(bins))

    assert pack_online([6, 5, 3, 4], 10, spy) == [0, 1, 0, 1]
    # 6 and 5 open bins without asking; 3 fits both; 4 fits only bin 1.
    assert seen == [(3.0, [4.0, 5.0]), (4.0, [5.0])]


def test_priority_of_the_wrong_shape_is_a_candidate_error():
    with pytest.raises(
        ValueError, match="priority returned shape \\(\\) for 1 fitting bins at item 1"
    ):
        pack_online([5, 2], 10, lambda item, bins: 1.0)


def test_valid_packing_metrics_are_hand_computed():
    verdict = BinPacking().score(
        _small_case([5, 7, 2, 9]), {"assignment": [0, 1, 0, 2]}
    )
    # sizes sum to 23 -> L1 = ceil(2.3) = 3; 3 bins used -> 0 % excess.
    assert verdict == Verdict(
        True, {"bins": 3.0, "l1_bound": 3.0, "excess_pct": 0.0, "neg_excess_pct": 0.0}
    )
    verdict = BinPacking().score(_small_case([6, 6, 6]), {"assignment": [0, 1, 2]})
    assert verdict.metrics["excess_pct"] == pytest.approx(50.0)  # 3 bins, L1 = 2


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        (
            {"assignment": [0, 0, 0]},
            "item 1 (size 7) overfills bin 0, which has 5 left",
        ),
        (
            {"assignment": [0, 1, 2]},
            "item 2 (size 2) opens bin 2 although bin 0 fits it (any-fit rule)",
        ),
        (
            {"assignment": [0, 2, 1]},
            "item 1 goes to bin 2; bins must be numbered 0..1 in order of first use",
        ),
        ({"assignment": [1, 0, 0]}, "item 0 goes to bin 1; bins must be numbered 0..0"),
        ({"assignment": [0, -1, 0]}, "item 1 goes to bin -1"),
        ({"assignment": [0, 1]}, "assignment has 2 entries for 3 items"),
        ({"assignment": [0, 1, 0, 0]}, "assignment has 4 entries for 3 items"),
        ({"assignment": [0, 1.0, 0]}, "assignment[1] is float 1.0, not a bin index"),
        ({"assignment": [0, True, 0]}, "assignment[1] is bool True, not a bin index"),
        ({"assignment": ["0", 1, 0]}, "assignment[0] is str '0', not a bin index"),
        ({"assignment": "010"}, "assignment is str, not a list"),
        ({"bins": [0, 1, 0]}, "output must be a dict with 'assignment'"),
        (None, "output must be a dict with 'assignment', got None"),
    ],
)
def test_scorer_rejects_bad_packings_with_a_reason(output, reason):
    verdict = BinPacking().score(_small_case([5, 7, 2]), output)
    assert not verdict.valid
    assert reason in verdict.reason
    assert verdict.metrics == {"l1_bound": 2.0, "neg_excess_pct": -100.0}


def test_item_larger_than_a_bin_cannot_be_packed():
    assert (
        check_assignment([11], 10, [0])
        == "item 0 (size 11) overfills bin 0, which has 10 left"
    )


def test_worst_fit_stays_above_the_floor():
    # Any-fit packings use at most 2 * L1 bins, so -100 is below every valid score.
    suite = BinPacking(datasets=["or1"])
    for case in suite.cases():
        items, capacity = case.payload["items"], case.payload["capacity"]
        output = {"assignment": pack_online(items, capacity, lambda item, bins: bins)}
        verdict = suite.score(case, output)
        assert verdict.valid and verdict.metrics["neg_excess_pct"] > -100.0


def test_dataset_excess_is_a_ratio_of_means():
    verdicts = {
        "or1/a": Verdict(True, {"bins": 10.0, "l1_bound": 10.0}),
        "or1/b": Verdict(True, {"bins": 13.0, "l1_bound": 10.0}),
        "weibull5k/c": Verdict(True, {"bins": 3.0, "l1_bound": 2.0}),
    }
    assert dataset_excess_pct(verdicts) == pytest.approx(
        {"or1": 15.0, "weibull5k": 50.0}
    )
    verdicts["or1/b"] = Verdict(False, {"neg_excess_pct": -100.0}, "overfills bin 0")
    with pytest.raises(ValueError, match=r"case or1/b is invalid \(overfills bin 0\)"):
        dataset_excess_pct(verdicts)


def test_l1_bound_and_normalize():
    assert l1_bound([5, 7, 2], 10) == 2
    assert l1_bound([5, 5], 10) == 1
    suite = BinPacking()
    assert [suite.normalize(v) for v in (0.0, -5.0, -100.0)] == [1.0, 0.95, 0.0]


def test_cases_ids_payloads_and_splits():
    cases = BinPacking().cases()
    assert len(cases) == 4 * 20 + 5
    first = cases[0]
    assert (first.case_id, first.split) == ("or1/u120_00", "train")
    assert first.payload["dataset"] == "or1" and first.payload["capacity"] == 150
    assert len(first.payload["items"]) == 120 and first.payload["items"][:2] == [42, 69]
    assert [c.split for c in cases[:8]] == ["train", "train", "select", "holdout"] * 2
    weibull = [c for c in cases if c.payload["dataset"] == "weibull5k"]
    assert [(c.case_id, c.split) for c in weibull] == [
        ("weibull5k/test_0", "train"),
        ("weibull5k/test_1", "train"),
        ("weibull5k/test_2", "select"),
        ("weibull5k/test_3", "holdout"),
        ("weibull5k/test_4", "train"),
    ]
    assert all(len(c.payload["items"]) == 5000 for c in weibull)


def test_datasets_parameter_selects_and_names_bad_values():
    cases = BinPacking(datasets=["or2", "weibull5k"]).cases()
    assert {c.payload["dataset"] for c in cases} == {"or2", "weibull5k"} and len(
        cases
    ) == 25
    with pytest.raises(ValueError, match=r"unknown datasets \['or5'\]"):
        BinPacking(datasets=["or1", "or5"])
    assert BinPacking(datasets="or1, weibull5k").datasets == ("or1", "weibull5k")
    with pytest.raises(ValueError, match="non-empty list"):
        BinPacking(datasets=" , ")
    with pytest.raises(ValueError, match="duplicates"):
        BinPacking(datasets=["or1", "or1"])


def test_funsearch_or3_is_the_or_library_binpack3():
    ours = read_instances("binpack3.txt")
    theirs = read_instances("funsearch_or3.json")
    assert ours == theirs
    assert len(ours) == 20 and all(len(i.items) == 500 for i in ours)


def test_reference_data_is_package_data_and_needs_no_shared_folder():
    assert REFERENCE_DIR == Path(suites.data.__file__).parent / "reference"
    assert REFERENCE_DIR.is_dir() and "shared" not in REFERENCE_DIR.parts[-3:]
    assert verify_all() == len(REFERENCE_SHA256) == 12
    assert BinPacking(datasets=["or1", "weibull5k"]).check_data() == 2


def test_missing_data_file_is_named_with_the_fix(tmp_path):
    with pytest.raises(ReferenceDataError, match=r"binpack1\.txt is missing from the installed package; reinstall"):
        read_verified("bin_packing/binpack1.txt", root=tmp_path)


def test_changed_data_file_is_refused_by_name(tmp_path):
    (tmp_path / "bin_packing").mkdir()
    original = REFERENCE_DIR / "bin_packing" / "binpack1.txt"
    changed = tmp_path / "bin_packing" / "binpack1.txt"
    shutil.copy(original, changed)
    assert read_verified("bin_packing/binpack1.txt", root=tmp_path) == original.read_bytes()
    changed.write_text(original.read_text().replace("u120_00", "u120_99", 1))
    with pytest.raises(ReferenceDataError, match=r"binpack1\.txt has sha256 [0-9a-f]{64}, but the suite pinned"):
        read_verified("bin_packing/binpack1.txt", root=tmp_path)


def test_unpinned_file_is_refused():
    with pytest.raises(ReferenceDataError, match="not a pinned reference file"):
        read_verified("bin_packing/other.txt")


def test_every_dataset_file_is_pinned():
    assert set(DATASET_FILES.values()) | {"funsearch_or3.json"} == set(SHA256)
    for filename, digest in SHA256.items():
        read_verified(f"bin_packing/{filename}", digest)


def test_registry_names_bad_parameters():
    assert get_suite("bin_packing", datasets=["or1"]).datasets == ("or1",)
    with pytest.raises(
        ValueError,
        match=r"has no parameter 'max_items'; its parameters: \['datasets'\]",
    ):
        get_suite("bin_packing", max_items=100)
