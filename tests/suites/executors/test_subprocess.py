"""The subprocess executor against hostile candidates, under every isolation level this
machine supports. Every test really runs the hostile code, then checks the recorded
status and that the parent (this process) and the host are unharmed. A guarantee that an
isolation level does not give is skipped with the reason, not faked."""

from __future__ import annotations

import hashlib
import os
import resource
import socket
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from suites.base import Case
from tests.suites.executors.processes import sandbox_processes

REPO = Path(__file__).resolve().parents[3]
RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
"""Calls the entrypoint with the payload as keyword arguments."""


def program(source: str) -> str:
    return textwrap.dedent(source).lstrip()


def cases(*payloads: dict) -> list[Case]:
    return [Case(f"case-{index}", "train", payload) for index, payload in enumerate(payloads)]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- hostile: time, memory, processes -------------------------------------------------------


@pytest.mark.parametrize(
    "hang, limits, reason",
    [  # spinning is cut by its CPU time (the wall backstop is far), sleeping by the wall backstop
        ("while True:\n        pass", {"wall_factor": 5.0}, "CPU-time limit of 1 s"),
        ("import time\n    time.sleep(60)", {"wall_factor": 1.5}, "wall-clock limit of 1.5 s"),
    ],
)
def test_hang_times_out_close_to_the_limit(sandboxed, sandbox_root, engine_allowance, hang, limits, reason):
    source = f"def solve(hang):\n    if not hang:\n        return 'done'\n    {hang}\n"
    started = time.monotonic()
    payloads = cases({"hang": False}, {"hang": True}, {"hang": False})
    executor = sandboxed(timeout_s=1.0, **limits)
    results = executor.run(source, RUNNER, "solve", payloads)
    elapsed = time.monotonic() - started
    assert [r.status for r in results] == ["ok", "timeout", "ok"]
    assert reason in results[1].error
    if "CPU" in reason:
        assert 1.0 <= results[1].cpu_s < 1.3 and 0.9 <= results[1].wall_s < 5.0  # the clocks start a read apart
    else:
        assert 1.5 <= results[1].wall_s < 2.0 and results[1].cpu_s < 0.2
    assert elapsed < results[1].wall_s + 2.0 + engine_allowance(executor, 2)  # the limit plus two child start-ups
    assert sandbox_processes(sandbox_root) == []


def test_a_program_that_hangs_while_loading_costs_one_timeout_for_all_cases(sandboxed, engine_allowance):
    started = time.monotonic()
    executor = sandboxed(timeout_s=0.5, load_limit_s=1.0)
    results = executor.run("while True:\n    pass\n", RUNNER, "solve", cases({}, {}, {}))
    assert [r.status for r in results] == ["timeout"] * 3
    assert all(r.error.startswith("loading the program: exceeded the CPU-time limit of 1 s") for r in results)
    assert all(1.0 <= r.cpu_s < 1.3 for r in results)
    assert time.monotonic() - started < results[0].wall_s + 1.5 + engine_allowance(executor, 1)  # one cut for all


def test_memory_bomb_is_stopped_without_harming_the_parent(sandboxed):
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
    results = sandboxed(memory_mb=256).run(source, RUNNER, "solve", cases({"bomb": True}, {"bomb": False}))
    assert results[0].status == "memory" and "MemoryError" in results[0].error
    assert (results[1].status, results[1].output) == ("ok", 0)
    assert peak_rss_mb() - before < 50


def test_fork_bomb_is_contained_and_leaves_no_process(sandboxed, sandbox_root):
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
    executor = sandboxed(timeout_s=1.5, wall_factor=2.0, max_processes=16)  # its forks mostly sleep
    results = executor.run(source, RUNNER, "solve", cases({"bomb": True}, {"bomb": False}))
    assert results[0].status in {"timeout", "killed", "error"}
    assert (results[1].status, results[1].output) == ("ok", "calm")
    assert sandbox_processes(sandbox_root) == []


def test_a_grandchild_that_leaves_the_session_is_killed_too(sandboxed, sandbox_root):
    executor = sandboxed()
    if executor.isolation == "none" and os.geteuid() != 0:
        pytest.skip("isolation none without root has no pid namespace nor per-child uid to find a setsid() escapee")
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


def test_max_processes_is_enforced(sandboxed):
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
    [result] = sandboxed(max_processes=8).run(source, RUNNER, "solve", cases({}))
    forked, failure = result.output
    assert failure == "BlockingIOError" and forked < 8


def test_os_exit_kills_only_its_case(sandboxed):
    source = program(
        """
        import os
        def solve(x):
            if x == 1:
                os._exit(0)
            return x
        """
    )
    results = sandboxed().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 1}, {"x": 2}, {"x": 3}))
    assert [r.status for r in results] == ["ok", "killed", "ok", "ok"]
    assert "exited with code 0 before the case returned" in results[1].error
    assert [r.output for r in results] == [0, None, 2, 3]


def test_segfault_is_killed_with_the_signal_named(sandboxed):
    source = "import ctypes\ndef solve():\n    return ctypes.string_at(0)\n"
    [result] = sandboxed().run(source, RUNNER, "solve", cases({}))
    assert result.status == "killed" and "SIGSEGV" in result.error


def test_stdout_flood_is_bounded(sandboxed):
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
    executor = sandboxed(timeout_s=1.0, max_output_bytes=100_000)
    results = executor.run(source, RUNNER, "solve", cases({"stubborn": False}, {"stubborn": True}))
    assert results[0].status == "error" and "File too large" in results[0].error
    assert results[1].status == "timeout"
    assert [r.extra["stdout_bytes"] for r in results] == [100_000, 100_000]  # flooded up to the cap, not past it
    assert peak_rss_mb() - before < 50


# --- hostile: network, files ------------------------------------------------------------------


def test_network_is_unreachable(sandboxed):
    executor = sandboxed(timeout_s=8.0)
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


def test_a_private_holdout_file_is_unreadable(sandboxed, tmp_path):
    executor = sandboxed()
    if executor.isolation != "bwrap" and os.geteuid() != 0:
        pytest.skip("without bwrap and without root the candidate keeps our uid and can read our files (documented)")
    holdout = tmp_path / "holdout.txt"
    holdout.write_text("the held-out answers")
    holdout.chmod(0o600)
    [result] = executor.run(READER, RUNNER, "solve", cases({"path": str(holdout)}))
    assert result.status == "ok" and not result.output.startswith("read")


@pytest.mark.parametrize("kind", ["reference data", "scorer source", "world-readable file"])
def test_hidden_data_and_scorer_sources_do_not_exist_inside_the_sandbox(sandboxed, tmp_path, kind):
    executor = sandboxed()
    if executor.isolation == "none":
        pytest.skip("isolation none hides no world-readable file; it relies on file permissions (documented)")
    public = tmp_path / "public.txt"
    public.write_text("readable by everyone on the host")
    public.chmod(0o644)
    path = {
        "reference data": REPO / "suites" / "reference" / "bin_packing" / "binpack1.txt",
        "scorer source": REPO / "suites" / "base.py",
        "world-readable file": public,
    }[kind]
    if not path.is_file():
        pytest.skip(f"{path} does not exist on this machine")
    [result] = executor.run(READER, RUNNER, "solve", cases({"path": str(path)}))
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


def test_writes_outside_the_sandbox_do_not_land(sandboxed):
    executor = sandboxed()
    if executor.isolation != "bwrap" and os.geteuid() != 0:
        pytest.skip("without bwrap and without root the candidate keeps our uid and may write our files (documented)")
    targets = [REPO / f"ratchet-escape-{uuid.uuid4().hex}", REPO / "suites" / "executors" / "harness.py"]
    if executor.isolation != "none":  # bwrap and unshare give the sandbox its own /tmp
        targets.append(Path("/tmp") / f"ratchet-escape-{uuid.uuid4().hex}")
    harness_digest = hashlib.sha256(targets[1].read_bytes()).hexdigest()
    results = executor.run(WRITER, RUNNER, "solve", cases(*({"path": str(t)} for t in targets), {"path": "own.txt"}))
    assert [r.status for r in results] == ["ok"] * len(results)
    assert results[-1].output == "written"  # its own directory is writable
    assert not targets[0].exists() and not (len(targets) > 2 and targets[2].exists())
    assert hashlib.sha256(targets[1].read_bytes()).hexdigest() == harness_digest


def test_directories_the_candidate_locked_are_still_removed(sandboxed, sandbox_root):
    source = program(
        """
        import os
        def solve():
            os.makedirs("locked/inner")
            open("locked/inner/data", "w").close()
            os.symlink("/usr", "locked/usr")
            os.chmod("locked/inner", 0)
            os.chmod("locked", 0)
            return "locked"
        """
    )
    [result] = sandboxed().run(source, RUNNER, "solve", cases({}))
    assert result.output == "locked"
    assert os.listdir(sandbox_root) == []
    assert os.stat("/usr").st_mode & 0o777 == 0o755


# --- hostile: tampering with the harness -----------------------------------------------------


def test_forged_result_lines_are_ignored_and_flagged(sandboxed):
    source = program(
        """
        import json, os, sys
        FD = int(sys.argv[1]) if sys.argv[1].isdigit() else os.open(sys.argv[1], os.O_WRONLY)  # docker: a FIFO
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
    results = sandboxed().run(source, RUNNER, "solve", cases({"x": 0}, {"x": 1}, {"x": 2}))
    assert [r.case_id for r in results] == ["case-0", "case-1", "case-2"]
    assert [r.output for r in results] == [0, 10, 20]
    assert all(r.extra["protocol_violations"] == 3 for r in results)
