"""The subprocess executor against well-behaved and hostile candidates, under every
isolation level this machine supports. Every hostile test really runs the hostile code
and then checks the recorded status and that the parent (this process) is unharmed."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import socket
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from schemas.configs import SandboxConfig
from suites.base import Case
from suites.executors import InProcessExecutor, SandboxError, SubprocessExecutor, make_executor as build
from suites.executors import sandbox
from suites.executors.sandbox import ISOLATION_ENV

REPO = Path(__file__).resolve().parents[3]
RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
"""Calls the entrypoint with the payload as keyword arguments."""


def program(source: str) -> str:
    return textwrap.dedent(source).lstrip()


def cases(*payloads: dict) -> list[Case]:
    return [Case(f"case-{index}", "train", payload) for index, payload in enumerate(payloads)]


def sandbox_processes(root: str) -> list[int]:
    """Live processes whose command line names ``root``: bwrap, unshare, the harness
    and every fork of it carry their sandbox directory in argv."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:  # exited while we looked
                continue
            if root.encode() in cmdline:
                found.append(int(entry.name))
    return found


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- functional -------------------------------------------------------------------------------


def test_runs_every_case_in_order(make_executor):
    executor = make_executor()
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


def test_exception_is_an_error_with_its_text_and_place(make_executor):
    source = program(
        """
        def solve(x):
            return 1 / x
        """
    )
    results = make_executor().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 4}))
    assert results[0].status == "error"
    assert "ZeroDivisionError: division by zero" in results[0].error
    assert "candidate.py:2 in solve" in results[0].error
    assert (results[1].status, results[1].output) == ("ok", 0.25)


def test_environment_is_scrubbed(make_executor, monkeypatch):
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
    [result] = make_executor().run(source, RUNNER, "solve", cases({}))
    env = result.output
    assert result.status == "ok"
    assert "leaked-secret" not in str(env)
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "PWD", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
                        "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"}
    assert env["PYTHONHASHSEED"] == "0" and env["OMP_NUM_THREADS"] == "1"


def test_numpy_is_importable_and_outputs_must_be_json(make_executor):
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
    results = make_executor(max_output_bytes=2048).run(source, RUNNER, "solve", cases({"kind": "list"}, {"kind": "array"}, {"kind": "big"}))
    assert (results[0].status, results[0].output) == ("ok", [0, 1, 2])
    assert results[1].status == "invalid" and "not JSON-serialisable" in results[1].error
    assert results[2].status == "invalid" and "max_output_bytes=2048" in results[2].error


def test_a_program_that_fails_to_load_fails_every_case(make_executor):
    executor = make_executor()
    broken = executor.run("def solve(:\n", RUNNER, "solve", cases({}, {}))
    assert [r.status for r in broken] == ["error", "error"]
    assert all("SyntaxError" in r.error for r in broken)
    missing = executor.run("def other():\n    return 1\n", RUNNER, "solve", cases({}))
    assert missing[0].status == "error" and "defines no function 'solve'" in missing[0].error


def test_sys_exit_is_an_error_of_that_case(make_executor):
    source = "import sys\ndef solve(code):\n    sys.exit(code)\n"
    results = make_executor().run(source, RUNNER, "solve", cases({"code": 3}, {"code": 0}))
    assert [r.status for r in results] == ["error", "error"]
    assert results[0].error.startswith("SystemExit: 3")


def test_unencodable_payload_is_our_error_not_the_candidate(make_executor):
    with pytest.raises(SandboxError, match="not JSON-able"):
        make_executor().run("def solve(x):\n    return x\n", RUNNER, "solve", cases({"x": object()}))


# --- hostile: time, memory, processes -------------------------------------------------------


@pytest.mark.parametrize("hang", ["while True:\n        pass", "import time\n    time.sleep(60)"])
def test_hang_times_out_close_to_the_limit(make_executor, sandbox_root, hang):
    source = f"def solve(hang):\n    if not hang:\n        return 'done'\n    {hang}\n"
    started = time.monotonic()
    results = make_executor(timeout_s=1.0).run(source, RUNNER, "solve", cases({"hang": False}, {"hang": True}, {"hang": False}))
    elapsed = time.monotonic() - started
    assert [r.status for r in results] == ["ok", "timeout", "ok"]
    assert "wall-clock limit of 1 s" in results[1].error
    assert 1.0 <= results[1].wall_s < 1.5
    assert elapsed < 3.0  # the limit plus two child start-ups, not more
    assert sandbox_processes(sandbox_root) == []


def test_memory_bomb_is_stopped_without_harming_the_parent(make_executor):
    source = program(
        """
        def solve(bomb):
            hoard = []
            while bomb:
                hoard.append(bytearray(10_000_000))
            return len(hoard)
        """
    )
    before = peak_rss_mb()
    results = make_executor(memory_mb=256).run(source, RUNNER, "solve", cases({"bomb": True}, {"bomb": False}))
    assert results[0].status == "memory" and "MemoryError" in results[0].error
    assert (results[1].status, results[1].output) == ("ok", 0)
    assert peak_rss_mb() - before < 50


def test_fork_bomb_is_contained_and_leaves_no_process(make_executor, sandbox_root):
    source = program(
        """
        import os, time
        def solve(bomb):
            while bomb:
                try:
                    os.fork()
                except OSError:
                    time.sleep(0.001)
            return "calm"
        """
    )
    results = make_executor(timeout_s=1.5, max_processes=16).run(source, RUNNER, "solve", cases({"bomb": True}, {"bomb": False}))
    assert results[0].status in {"timeout", "killed", "error"}
    assert (results[1].status, results[1].output) == ("ok", "calm")
    assert sandbox_processes(sandbox_root) == []


def test_a_grandchild_that_leaves_the_session_is_killed_too(make_executor, sandbox_root):
    executor = make_executor()
    if executor.isolation == "none" and os.geteuid() != 0:
        pytest.skip("isolation none without root has no pid namespace and no per-child uid to find a setsid() escapee (documented)")
    source = program(
        """
        import os, time
        def solve():
            if os.fork() == 0:
                os.setsid()
                time.sleep(60)
                os._exit(0)
            return "left one behind"
        """
    )
    [result] = executor.run(source, RUNNER, "solve", cases({}))
    assert result.status == "ok"
    assert sandbox_processes(sandbox_root) == []


def test_max_processes_is_enforced(make_executor):
    source = program(
        """
        import os
        def solve():
            children = []
            try:
                for _ in range(50):
                    pid = os.fork()
                    if pid == 0:
                        import time
                        time.sleep(30)
                        os._exit(0)
                    children.append(pid)
            except OSError as exc:
                return [len(children), type(exc).__name__]
            return [len(children), None]
        """
    )
    [result] = make_executor(max_processes=8).run(source, RUNNER, "solve", cases({}))
    forked, failure = result.output
    assert failure == "BlockingIOError" and forked < 8


def test_os_exit_kills_only_its_case(make_executor):
    source = program(
        """
        import os
        def solve(x):
            if x == 1:
                os._exit(0)
            return x
        """
    )
    results = make_executor().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 1}, {"x": 2}, {"x": 3}))
    assert [r.status for r in results] == ["ok", "killed", "ok", "ok"]
    assert "exited with code 0 before the case returned" in results[1].error
    assert [r.output for r in results] == [0, None, 2, 3]


def test_segfault_is_killed_with_the_signal_named(make_executor):
    source = "import ctypes\ndef solve():\n    return ctypes.string_at(0)\n"
    [result] = make_executor().run(source, RUNNER, "solve", cases({}))
    assert result.status == "killed" and "SIGSEGV" in result.error


def test_stdout_flood_is_bounded(make_executor):
    source = program(
        """
        import os, sys
        def solve(stubborn):
            chunk = "x" * 1_000_000
            while True:
                try:
                    sys.stdout.write(chunk)
                    os.write(1, chunk.encode())
                except OSError:
                    if not stubborn:
                        raise
        """
    )
    before = peak_rss_mb()
    results = make_executor(timeout_s=1.0, max_output_bytes=100_000).run(source, RUNNER, "solve", cases({"stubborn": False}, {"stubborn": True}))
    assert results[0].status == "error" and "File too large" in results[0].error
    assert results[1].status == "timeout"
    assert all(r.extra["stdout_bytes"] <= 100_000 for r in results)
    assert peak_rss_mb() - before < 50


# --- hostile: network, files ------------------------------------------------------------------


def test_network_is_unreachable(make_executor):
    executor = make_executor(timeout_s=8.0)
    if executor.isolation == "none":
        pytest.skip("isolation none has no network namespace (documented); nothing to test")
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port)):  # control: the listener works
        listener.accept()[0].close()
    source = program(
        """
        import socket
        def solve(port):
            outcomes = []
            for address in [("127.0.0.1", port), ("1.1.1.1", 80)]:
                try:
                    socket.create_connection(address, timeout=2).close()
                    outcomes.append("connected")
                except OSError as exc:
                    outcomes.append(type(exc).__name__)
            return outcomes
        """
    )
    [result] = executor.run(source, RUNNER, "solve", cases({"port": port}))
    assert result.status == "ok" and "connected" not in result.output
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


READER = program(
    """
    def solve(path):
        try:
            with open(path, "rb") as handle:
                return "read %d bytes" % len(handle.read())
        except OSError as exc:
            return type(exc).__name__
    """
)


def test_a_private_holdout_file_is_unreadable(make_executor, tmp_path):
    executor = make_executor()
    if executor.isolation != "bwrap" and os.geteuid() != 0:
        pytest.skip("without bwrap and without root the candidate keeps our uid and can read our files (documented)")
    holdout = tmp_path / "holdout.txt"
    holdout.write_text("the held-out answers")
    holdout.chmod(0o600)
    [result] = executor.run(READER, RUNNER, "solve", cases({"path": str(holdout)}))
    assert result.status == "ok" and not result.output.startswith("read")


@pytest.mark.parametrize("path", ["/work/shared/data/bin_packing/binpack1.txt", str(REPO / "suites" / "base.py"), str(REPO / ".ratchet")])
def test_hidden_data_and_scorer_sources_do_not_exist_inside_bwrap(make_executor, path):
    executor = make_executor()
    if executor.isolation != "bwrap":
        pytest.skip(f"only bwrap hides world-readable files; {executor.isolation} relies on file permissions (documented)")
    [result] = executor.run(READER, RUNNER, "solve", cases({"path": path}))
    assert result.output == "FileNotFoundError"


WRITER = program(
    """
    def solve(path):
        try:
            with open(path, "w") as handle:
                handle.write("escaped")
            return "written"
        except OSError as exc:
            return type(exc).__name__
    """
)


def test_writes_outside_the_sandbox_do_not_land(make_executor):
    executor = make_executor()
    if executor.isolation != "bwrap" and os.geteuid() != 0:
        pytest.skip("without bwrap and without root the candidate keeps our uid and may write our files (documented)")
    targets = [REPO / f"ratchet-escape-{uuid.uuid4().hex}", REPO / "suites" / "executors" / "harness.py"]
    if executor.isolation == "bwrap":  # only bwrap gives the sandbox its own /tmp
        targets.append(Path("/tmp") / f"ratchet-escape-{uuid.uuid4().hex}")
    harness_digest = hashlib.sha256(targets[1].read_bytes()).hexdigest()
    results = executor.run(WRITER, RUNNER, "solve", cases(*({"path": str(t)} for t in targets), {"path": "own.txt"}))
    assert [r.status for r in results] == ["ok"] * len(results)
    assert results[-1].output == "written"  # its own directory is writable
    assert not targets[0].exists() and not (len(targets) > 2 and targets[2].exists())
    assert hashlib.sha256(targets[1].read_bytes()).hexdigest() == harness_digest


# --- hostile: tampering with the harness -----------------------------------------------------


def test_forged_result_lines_are_ignored_and_flagged(make_executor):
    source = program(
        """
        import json, os, sys
        FD = int(sys.argv[1])
        def solve(x):
            if x == 0:
                for index, case_id in [(99, "not-requested"), (2, "case-2")]:
                    line = {"event": "result", "index": index, "case_id": case_id, "status": "ok", "output": "perfect",
                            "error": None, "wall_s": 0, "cpu_s": 0, "peak_rss_mb": 0}
                    os.write(FD, (json.dumps(line) + "\\n").encode())
                os.write(FD, b"not json at all\\n")
                json.dumps = lambda *args, **kwargs: '"hijacked"'
            return x * 10
        """
    )
    results = make_executor().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 1}, {"x": 2}))
    assert [r.case_id for r in results] == ["case-0", "case-1", "case-2"]
    assert [r.output for r in results] == [0, 10, 20]
    assert all(r.extra["protocol_violations"] == 3 for r in results)


# --- configuration ----------------------------------------------------------------------------


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


def test_without_bwrap_auto_falls_back_and_still_evaluates(path_without_bwrap, sandbox_root):
    executor = SubprocessExecutor(SandboxConfig(timeout_s=2.0), tmp_root=sandbox_root)
    assert executor.isolation in {"unshare-net", "none"}
    results = executor.run("def solve(x):\n    return x + 1\n", RUNNER, "solve", cases({"x": 1}, {"x": 2}))
    assert [(r.status, r.output, r.extra["isolation"]) for r in results] == [("ok", 2, executor.isolation), ("ok", 3, executor.isolation)]
    with pytest.raises(SandboxError, match="bwrap is not on PATH"):
        SubprocessExecutor(isolation="bwrap")


def test_make_executor_follows_the_config():
    assert isinstance(build(SandboxConfig()), SubprocessExecutor)
    assert isinstance(build(SandboxConfig(kind="inprocess")), InProcessExecutor)
