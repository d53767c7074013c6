"""The subprocess executor with well-behaved and plainly failing candidates, under
every isolation level this machine supports, and how its isolation is chosen."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from schemas.configs import SandboxConfig
from suites.base import Case
from suites.executors import InProcessExecutor, SandboxError, SubprocessExecutor, make_executor, sandbox
from suites.executors.sandbox import ISOLATION_ENV

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
"""Calls the entrypoint with the payload as keyword arguments."""


def program(source: str) -> str:
    return textwrap.dedent(source).lstrip()


def cases(*payloads: dict) -> list[Case]:
    return [Case(f"case-{index}", "train", payload) for index, payload in enumerate(payloads)]


def test_runs_every_case_in_order(sandboxed):
    executor = sandboxed()
    source = program(
        """
        def solve(x):
            return {"double": 2 * x, "items": [x, "s", None, 1.5]}
        """
    )
    results = executor.run(source, RUNNER, "solve", cases({"x": 1}, {"x": 2}, {"x": 3}))
    assert [r.case_id for r in results] == ["case-0", "case-1", "case-2"]
    assert [r.status for r in results] == ["ok"] * 3
    assert [r.output for r in results] == [{"double": 2 * x, "items": [x, "s", None, 1.5]} for x in (1, 2, 3)]
    assert all(r.extra["isolation"] == executor.isolation for r in results)
    assert all(r.wall_s >= 0 and r.cpu_s is not None and r.peak_rss_mb > 0 for r in results)


def test_exception_is_an_error_with_its_text_and_place(sandboxed):
    source = program(
        """
        def solve(x):
            return 1 / x
        """
    )
    results = sandboxed().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 4}))
    assert results[0].status == "error"
    assert "ZeroDivisionError: division by zero" in results[0].error
    assert "candidate.py:2 in solve" in results[0].error
    assert (results[1].status, results[1].output) == ("ok", 0.25)


def test_environment_is_scrubbed(sandboxed, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "leaked-secret")
    monkeypatch.setenv("RATCHET_STORE", "/somewhere")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///x")
    source = program(
        """
        import os
        def solve():
            return dict(os.environ)
        """
    )
    [result] = sandboxed().run(source, RUNNER, "solve", cases({}))
    env = result.output
    assert result.status == "ok"
    assert "leaked-secret" not in str(env)
    engine_set = {"HOSTNAME"} if sandboxed().isolation == "docker" else set()  # the container's id, set by docker
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "PWD", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", *engine_set}
    assert env["PYTHONHASHSEED"] == "0" and env["OMP_NUM_THREADS"] == "1"


def test_numpy_is_importable_and_outputs_must_be_json(sandboxed):
    source = program(
        """
        import numpy as np
        def solve(kind):
            if kind == "list":
                return np.arange(3).tolist()
            if kind == "array":
                return np.arange(3)
            return "x" * 5000
        """
    )
    payloads = cases({"kind": "list"}, {"kind": "array"}, {"kind": "big"})
    results = sandboxed(max_output_bytes=2048).run(source, RUNNER, "solve", payloads)
    assert (results[0].status, results[0].output) == ("ok", [0, 1, 2])
    assert results[1].status == "invalid" and "not JSON-serialisable" in results[1].error
    assert results[2].status == "invalid" and "max_output_bytes=2048" in results[2].error


def test_a_program_that_fails_to_load_fails_every_case(sandboxed):
    executor = sandboxed()
    broken = executor.run("def solve(:\n", RUNNER, "solve", cases({}, {}))
    assert [r.status for r in broken] == ["error", "error"]
    assert all("SyntaxError" in r.error for r in broken)
    missing = executor.run("def other():\n    return 1\n", RUNNER, "solve", cases({}))
    assert missing[0].status == "error" and "defines no function 'solve'" in missing[0].error


def test_sys_exit_is_an_error_of_that_case(sandboxed):
    source = "import sys\ndef solve(code):\n    sys.exit(code)\n"
    results = sandboxed().run(source, RUNNER, "solve", cases({"code": 3}, {"code": 0}))
    assert [r.status for r in results] == ["error", "error"]
    assert results[0].error.startswith("SystemExit: 3")


def test_unencodable_payload_is_our_error_not_the_candidate(sandboxed):
    with pytest.raises(SandboxError, match="not JSON-able"):
        sandboxed().run("def solve(x):\n    return x\n", RUNNER, "solve", cases({"x": object()}))


def test_isolation_can_be_forced_by_environment(monkeypatch):
    monkeypatch.setenv(ISOLATION_ENV, "none")
    assert SubprocessExecutor().isolation == "none"
    monkeypatch.setenv(ISOLATION_ENV, "docker")
    with pytest.raises(SandboxError, match="not one of auto, bwrap, unshare, none"):
        SubprocessExecutor()


@pytest.fixture
def path_without_bwrap(tmp_path, monkeypatch):
    """PATH with only unshare and true on it, and the per-process probe forgotten."""
    for tool in ("unshare", "true"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"{tool} is not installed")
        (tmp_path / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(ISOLATION_ENV, raising=False)
    sandbox._probe.cache_clear()
    yield
    sandbox._probe.cache_clear()


def test_without_bwrap_auto_refuses_and_a_named_weaker_level_warns(path_without_bwrap, sandbox_root, monkeypatch):
    with pytest.raises(SandboxError, match=r"^no bubblewrap sandbox here \(bwrap is not on PATH.*apt-get install "
                                           r"bubblewrap.*RATCHET_SANDBOX_ISOLATION=unshare"):
        SubprocessExecutor(SandboxConfig(timeout_s=2.0), tmp_root=sandbox_root)
    monkeypatch.setenv(ISOLATION_ENV, "unshare")
    sandbox._warn_weaker.cache_clear()
    with pytest.warns(RuntimeWarning, match="weaker than bubblewrap"):
        executor = SubprocessExecutor(SandboxConfig(timeout_s=2.0), tmp_root=sandbox_root)
    assert executor.isolation == "unshare"
    results = executor.run("def solve(x):\n    return x + 1\n", RUNNER, "solve", cases({"x": 1}, {"x": 2}))
    assert [(r.status, r.output) for r in results] == [("ok", 2), ("ok", 3)]
    assert all(r.extra["isolation"] == "unshare" for r in results)
    with pytest.raises(SandboxError, match="bwrap is not on PATH"):
        SubprocessExecutor(isolation="bwrap")


def test_make_executor_follows_the_config():
    assert isinstance(make_executor(SandboxConfig()), SubprocessExecutor)
    assert isinstance(make_executor(SandboxConfig(kind="inprocess")), InProcessExecutor)
