"""The S3 server (moto on 127.0.0.1) stopped mid-run: a 3 s outage is retried with
backoff and the run is identical to one without it; a 31 s outage (longer than the
stages' 1 + 4 + 16 s of retries) fails the run with a `failed` event naming the stage,
and `ratchet resume` completes it identically."""

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_a_short_outage_is_retried_and_a_long_one_fails_naming_the_stage_then_resumes(faults, tmp_path):
    short, long = faults.s3_outages(3.0, 31.0, base=tmp_path)
    assert (short["exit"], short["status"], short["differs"]) == (0, "finished", {})
    assert short["execute_r0001_runs"] > 1  # the outage was hit, and retried
    assert long["exit"] == 1 and long["status"] == "failed"
    assert "stage execute r0001 failed" in long["error"]
    assert (long["resume_exit"], long["final"], long["differs"]) == (0, "finished", {})
