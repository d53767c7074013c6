"""The comparison every fault test relies on: canonical rows that differ only by run id
compare equal, and a lost, duplicated or changed row shows."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "fault_kit.py"


@pytest.fixture(scope="module")
def kit():
    spec = importlib.util.spec_from_file_location("benchmark_fault_kit", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_differences_count_rows_lost_and_extra_per_table(kit):
    expected = {"scores": ["a", "b", "b"], "registry": ["r"]}
    assert kit.differences(expected, {"scores": ["b", "a", "b"], "registry": ["r"]}) == {}
    assert kit.differences(expected, {"scores": ["a", "b"], "registry": ["r", "r"]}) == {"scores": (1, 0),
                                                                                       "registry": (0, 1)}
    assert kit.differences(expected, {"scores": ["a", "b", "c"]}) == {"scores": (1, 1), "registry": (1, 0)}


def test_run_ids_derived_ids_and_measured_times_are_canonical(kit):
    labels = {"aaaaaaaaaaaaaaaaaaaaaaaa": "E:x", "bbbbbbbbbbbbbbbbbbbbbbbb": "E:y"}
    row = {"run_id": "evolve-1", "execution_id": "aaaaaaaaaaaaaaaaaaaaaaaa", "wall_s": 1.5,
           "ids": ["bbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaa"],
           "error": "exceeded (used 2.01 s of CPU in 4.61 s of wall clock) in run evolve-1"}
    assert kit._canonical(row, "evolve-1", labels) == {
        "execution_id": "E:x", "ids": ["E:x", "E:y"],
        "error": "exceeded (used _ s of CPU in _ s of wall clock) in run RUN"}
    unknown = {"decision_id": "cccccccccccccccccccccccc"}  # an id with no label stays as is, so it shows
    assert kit._canonical(unknown, "evolve-1", labels) == unknown
