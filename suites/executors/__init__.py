"""Executors run candidate programs on cases: ``subprocess`` (default, sandboxed, for
untrusted code), ``docker`` (the same harness in a container) and ``inprocess``
(trusted code only). See DESIGN.md, "Execution of
candidates"."""

from __future__ import annotations

from schemas.configs import SandboxConfig
from suites.executors.base import Executor, SandboxError
from suites.executors.inprocess import InProcessExecutor
from suites.executors.subprocess import SubprocessExecutor

__all__ = ["Executor", "InProcessExecutor", "SandboxError", "SubprocessExecutor", "make_executor"]


def make_executor(config: SandboxConfig) -> Executor:
    """The executor ``config.kind`` names, with its limits."""
    if config.kind == "inprocess":
        return InProcessExecutor(max_output_bytes=config.max_output_bytes)
    if config.kind == "docker":
        from suites.executors.docker import DockerExecutor  # builds its image on first use

        return DockerExecutor(config)
    return SubprocessExecutor(config)
