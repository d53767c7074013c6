"""Fixtures for the executor tests: the subprocess executor under every isolation level
this machine supports and the docker executor where an engine answers (a level that
does not work here is skipped, with the reason), with its sandbox directories under a
per-test root so that leftovers can be found."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Callable, Iterator

import pytest

from schemas.configs import SandboxConfig
from suites.executors import SandboxError, SubprocessExecutor
from suites.executors.docker import DockerExecutor


@pytest.fixture
def sandbox_root() -> Iterator[str]:
    """Where one test's sandbox directories go; world-traversable so that a sandbox uid
    can reach its own directory under every isolation level."""
    root = tempfile.mkdtemp(prefix="ratchet-exec-test-", dir="/tmp")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


@pytest.fixture(params=["bwrap", "unshare", "none", pytest.param("docker", marks=pytest.mark.integration)])
def sandboxed(request, sandbox_root) -> Callable[..., SubprocessExecutor]:
    """Factory of executors forced to one isolation level (``docker``: the docker
    executor, which needs a reachable engine), with short limits."""

    def make(**limits) -> SubprocessExecutor:
        config = SandboxConfig(**{"timeout_s": 2.0, **limits})
        if request.param == "docker":
            return DockerExecutor(config, tmp_root=sandbox_root)
        return SubprocessExecutor(config, isolation=request.param, tmp_root=sandbox_root)

    try:
        make()
    except SandboxError as exc:
        pytest.skip(f"isolation {request.param} is not available here: {exc}")
    return make


ENGINE_S_PER_CONTAINER = 2.0
"""Wall time a container's start, kill and removal through the engine may add (0.5-1.2 s
measured on a busy 2-core machine); the subprocess levels need none beyond their bounds."""


@pytest.fixture
def engine_allowance() -> Callable[[SubprocessExecutor, int], float]:
    """Extra wall time a test's end-to-end bound allows for ``n`` containers."""
    return lambda executor, n: ENGINE_S_PER_CONTAINER * n if executor.isolation == "docker" else 0.0
