"""The store on a 180 KiB tmpfs fills up mid-run: the run fails with a one-line error
(no traceback), no partial part is visible (`ratchet check` reads every part; no temp
file is left), and after the tmpfs is grown `ratchet resume` completes it identically."""

import os

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_a_full_disk_fails_the_run_cleanly_and_resume_completes_it_once_space_returns(faults, tmp_path):
    figures = faults.disk_full("180k", base=tmp_path)
    if isinstance(figures, str):
        pytest.skip(f"no tmpfs: {figures}")
    assert figures["exit"] == 1 and not figures["traceback"]
    assert "No space left on device" in figures["error"]
    assert (figures["check_exit"], figures["temp_files"]) == (0, 0)
    assert figures["grown"] and figures["resume_exit"] == 0
    assert (figures["final"], figures["differs"]) == ("finished", {})
