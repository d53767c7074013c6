"""evolve on a real Dask cluster (a `dask scheduler` and 2 CLI workers): a worker
SIGKILLed mid-round costs nothing (its candidate reruns on the other worker; rows
identical to the threaded run); the scheduler SIGKILLed mid-run fails the run cleanly
naming the stage, and `ratchet resume` on a new cluster at the same address completes
it identically."""

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_a_killed_worker_is_absorbed_and_a_lost_scheduler_fails_cleanly_then_resumes(faults, tmp_path):
    results = faults.dask_faults(base=tmp_path)
    worker, scheduler = results["worker"], results["scheduler"]
    assert worker["in_flight"] >= 1 and scheduler["in_flight"] >= 1  # killed mid-round
    assert (worker["exit"], worker["status"], worker["differs"]) == (0, "finished", {})
    assert scheduler["exit"] == 1 and scheduler["status"] == "failed"
    assert "stage execute r0001 failed" in scheduler["error"]
    assert (scheduler["resume_exit"], scheduler["final"], scheduler["differs"]) == (0, "finished", {})
