"""Executors run candidate programs on cases: ``subprocess`` (default, sandboxed, for
untrusted code), ``docker`` (the same harness in a container) and ``inprocess``
(trusted code only). See DESIGN.md, "Execution of
candidates"."""

from __future__ import annotations

import os

from schemas.configs import SandboxConfig
from suites.executors.base import Executor, SandboxError
from suites.executors.inprocess import InProcessExecutor
from suites.executors.subprocess import SubprocessExecutor

__all__ = ["PRESTART_ENV", "Executor", "InProcessExecutor", "SandboxError", "SubprocessExecutor", "make_executor"]


PRESTART_ENV = "RATCHET_SANDBOX_PRESTART"
"""``0`` turns off pre-started sandbox children (``warm.py``) for runs, e.g. to measure them."""


def make_executor(config: SandboxConfig, prestart: bool = False) -> Executor:
    """The executor ``config.kind`` names, with its limits. ``prestart``: the subprocess
    executor keeps the next batch's child started ahead (unless $RATCHET_SANDBOX_PRESTART=0)."""
    if config.kind == "inprocess":
        return InProcessExecutor(max_output_bytes=config.max_output_bytes)
    if config.kind == "docker":
        from suites.executors.docker import DockerExecutor  # builds its image on first use

        return DockerExecutor(config)
    return SubprocessExecutor(config, prestart=prestart and os.environ.get(PRESTART_ENV, "1") != "0")
