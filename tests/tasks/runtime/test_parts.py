"""`once`: a stage's part is computed once, published, and read back on every later call
(a Prefect retry, a resume); an empty part means "done, nothing" and is not recomputed."""

from datetime import datetime, timezone

import pytest

from schemas.rows import RegistryRow
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once

T0 = datetime(2026, 12, 2, tzinfo=timezone.utc)


def row(version: int) -> RegistryRow:
    return RegistryRow(run_id="r1", name="toolsim/self_healing", version=version, candidate_id=f"c{version}",
                       stage="stable", alias="champion", decision_id=f"d{version}", select_score=0.5 * version,
                       holdout_score=None, event_at=T0)


def test_a_part_is_computed_once_and_then_read(tmp_path):
    ref, calls = RunRef(store_uri=str(tmp_path / "store"), run_id="r1"), []

    def compute():
        calls.append(1)
        return [row(1), row(2)]

    first = once(ref, "registry", "register", "r0001", compute)
    again = once(ref, "registry", "register", "r0001", compute)
    assert len(calls) == 1
    assert [r.candidate_id for r in first] == [r.candidate_id for r in again] == ["c1", "c2"]
    assert [r.select_score for r in again] == [0.5, 1.0]
    assert store_for(ref.store_uri).has_part("registry", "r1", "register", "r0001")


def test_an_empty_part_is_done_and_not_recomputed(tmp_path):
    ref, calls = RunRef(store_uri=str(tmp_path / "store"), run_id="r1"), []

    def nothing():
        calls.append(1)
        return []

    assert once(ref, "registry", "register", "r0002", nothing) == []
    assert once(ref, "registry", "register", "r0002", nothing) == []
    assert calls == [1]


def test_a_failed_compute_publishes_nothing(tmp_path):
    ref = RunRef(store_uri=str(tmp_path / "store"), run_id="r1")

    def broken():
        raise RuntimeError("model went away")

    with pytest.raises(RuntimeError, match="model went away"):
        once(ref, "registry", "register", "r0003", broken)
    assert not store_for(ref.store_uri).has_part("registry", "r1", "register", "r0003")
    assert [r.version for r in once(ref, "registry", "register", "r0003", lambda: [row(3)])] == [3]
