"""The container clock reads a cgroup's CPU time in either cgroup version's format,
keeps the last value once the cgroup is gone, and refuses a running container whose
cgroup it cannot find (a candidate without a CPU limit). Real files and processes."""

from __future__ import annotations

import os
import subprocess

import pytest

from suites.executors import SandboxError
from suites.executors.cpu_clock import ContainerClock


@pytest.fixture
def client():
    """A live process standing in for the docker client, and its pidfd."""
    proc = subprocess.Popen(["sleep", "60"])
    pidfd = os.pidfd_open(proc.pid)
    yield proc, pidfd
    proc.kill()
    proc.wait()
    os.close(pidfd)


def test_cgroup_v1_and_v2_formats_and_the_last_value_after_removal(tmp_path, client):
    _, pidfd = client
    (tmp_path / "cid").write_text("abc123\n")
    v1, v2 = tmp_path / "v1" / "abc123", tmp_path / "v2" / "abc123"
    v2.mkdir(parents=True)
    (v2 / "cpu.stat").write_text("usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    places = ((f"{tmp_path}/v1/{{id}}/cpuacct.usage", 1e-9), (f"{tmp_path}/v2/{{id}}/cpu.stat", 1e-6))
    assert ContainerClock(str(tmp_path / "cid"), pidfd, places)() == pytest.approx(1.5)
    v1.mkdir(parents=True)
    (v1 / "cpuacct.usage").write_text("2250000000\n")
    clock = ContainerClock(str(tmp_path / "cid"), pidfd, places)
    assert clock() == pytest.approx(2.25)  # the first place found wins
    (v1 / "cpuacct.usage").unlink()  # the container ended and its cgroup went with it
    assert clock() == pytest.approx(2.25)


def test_a_running_container_without_a_known_cgroup_is_our_error(tmp_path, client):
    proc, pidfd = client
    (tmp_path / "cid").write_text("abc123")
    clock = ContainerClock(str(tmp_path / "cid"), pidfd, ((f"{tmp_path}/nowhere/{{id}}/cpu.stat", 1e-6),))
    with pytest.raises(SandboxError, match="is in none of the places known"):
        clock()
    proc.kill()
    proc.wait()
    assert clock() == 0.0  # the client has exited: the container ended before a read, nothing to limit
