"""Fixtures for the executor tests: the subprocess executor under every isolation level
this machine supports (a level that does not work here is skipped, with the reason),
with its sandbox directories under a per-test root so that leftovers can be found."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Callable, Iterator

import pytest

from schemas.configs import SandboxConfig
from suites.executors import SandboxError, SubprocessExecutor


@pytest.fixture
def sandbox_root() -> Iterator[str]:
    """Where one test's sandbox directories go; world-traversable so that a sandbox uid
    can reach its own directory under every isolation level."""
    root = tempfile.mkdtemp(prefix="ratchet-exec-test-", dir="/tmp")
    os.chmod(root, 0o755)
    yield root
    shutil.rmtree(root)


@pytest.fixture(params=["bwrap", "unshare", "none"])
def sandboxed(request, sandbox_root) -> Callable[..., SubprocessExecutor]:
    """Factory of subprocess executors forced to one isolation level, with short limits."""

    def make(**limits) -> SubprocessExecutor:
        config = SandboxConfig(**{"timeout_s": 2.0, **limits})
        return SubprocessExecutor(config, isolation=request.param, tmp_root=sandbox_root)

    try:
        make()
    except SandboxError as exc:
        pytest.skip(f"isolation {request.param} is not available here: {exc}")
    return make
