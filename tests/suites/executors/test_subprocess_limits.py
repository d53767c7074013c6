"""The subprocess executor's time limits measure the candidate, not the machine: a case
is cut by the CPU time of the sandbox's process tree, the wall clock is a looser
backstop for candidates that sleep, and loading the program is charged to no case.
Under every isolation level this machine supports; every test runs real code."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from suites.base import Case
from tests.suites.executors.processes import sandbox_processes
from suites.executors import cpu_clock

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"

BURN = textwrap.dedent(
    """
    import time

    def burn(seconds):
        start = time.process_time()
        while time.process_time() - start < seconds:
            pass
        return seconds
    """
)
"""``burn(s)`` uses ``s`` seconds of this process's CPU time, however busy the machine."""


def cases(*payloads: dict) -> list[Case]:
    return [Case(f"case-{index}", "train", payload) for index, payload in enumerate(payloads)]


def test_an_infinite_cpu_loop_is_cut_by_the_cpu_limit(sandboxed, sandbox_root):
    source = "def solve(spin):\n    while spin:\n        pass\n    return 'done'\n"
    executor = sandboxed(timeout_s=0.5, wall_factor=10.0)
    results = executor.run(source, RUNNER, "solve", cases({"spin": False}, {"spin": True}, {"spin": False}))
    assert [r.status for r in results] == ["ok", "timeout", "ok"]
    assert results[1].error.startswith("exceeded the CPU-time limit of 0.5 s (used 0.5")
    assert 0.5 <= results[1].cpu_s < 0.7
    assert 0.4 <= results[1].wall_s < 5.0  # the wall backstop of 10 x 0.5 s did not cut it (wall and CPU clocks start a read apart)
    assert sandbox_processes(sandbox_root) == []


def test_cpu_time_of_forked_children_counts_for_the_case(sandboxed, sandbox_root):
    source = textwrap.dedent(
        """
        import os
        def solve():
            for _ in range(2):
                if os.fork() == 0:
                    while True:
                        pass
            os.wait()  # the harness process itself uses no CPU meanwhile
        """
    )
    [result] = sandboxed(timeout_s=0.5, wall_factor=10.0).run(source, RUNNER, "solve", cases({}))
    assert result.status == "timeout" and "CPU-time limit of 0.5 s" in result.error
    assert 0.5 <= result.cpu_s < 0.7 and result.wall_s < 5.0
    assert sandbox_processes(sandbox_root) == []


def test_the_process_tree_is_found_without_the_children_file_too(monkeypatch):
    """Kernels without /proc/PID/task/TID/children: the tree comes from a scan of /proc."""
    script = "import os, time\nif os.fork() == 0:\n    while True: pass\ntime.sleep(60)\n"
    parent = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while (with_file := cpu_clock.tree_cpu_s(parent.pid)) < 0.2 and time.monotonic() < deadline:
            time.sleep(0.05)
        monkeypatch.setattr(cpu_clock, "_HAS_CHILDREN_FILE", False)
        scanned = cpu_clock.tree_cpu_s(parent.pid)
    finally:
        os.killpg(parent.pid, signal.SIGKILL)  # the spinning grandchild too
        parent.wait()
    assert 0.2 <= with_file <= scanned < with_file + 0.2  # the spinning grandchild counts, found both ways


def test_a_sleeping_candidate_is_cut_by_the_wall_clock_backstop(sandboxed, sandbox_root, engine_allowance):
    source = "import time\ndef solve():\n    time.sleep(1000)\n"
    started = time.monotonic()
    executor = sandboxed(timeout_s=0.5, wall_factor=2.0)
    [result] = executor.run(source, RUNNER, "solve", cases({}))
    assert result.status == "timeout"
    assert result.error.startswith("exceeded the wall-clock limit of 1 s (backstop; used 0.0")
    assert 1.0 <= result.wall_s < 1.4 and result.cpu_s < 0.1
    assert time.monotonic() - started < 2.5 + engine_allowance(executor, 1)
    assert sandbox_processes(sandbox_root) == []


def test_a_slow_import_is_not_charged_to_the_first_case(sandboxed):
    timeout_s = 0.5
    source = BURN + f"burn({1.5 * timeout_s})  # module-level work: 1.5 x the per-case limit\n"
    results = sandboxed(timeout_s=timeout_s).run(source, RUNNER, "burn", cases({"seconds": 0.1}, {"seconds": 0.1}))
    assert [(r.status, r.output) for r in results] == [("ok", 0.1), ("ok", 0.1)]
    assert all(0.1 <= r.cpu_s < timeout_s for r in results)
    assert all(r.wall_s < 1.5 * timeout_s for r in results)  # the import's 0.75 s of CPU is in neither
    # the load has its own allowance, and it is enforced in CPU time too
    slow = sandboxed(timeout_s=timeout_s, load_limit_s=0.5).run(source, RUNNER, "burn", cases({"seconds": 0.1}))
    assert slow[0].status == "timeout"
    assert slow[0].error.startswith("loading the program: exceeded the CPU-time limit of 0.5 s")


@pytest.fixture
def busy_core():
    """This process pinned to one core with two busy loops beside it, so that the
    sandbox children (which inherit the pinning) get about a third of that core."""
    allowed = os.sched_getaffinity(0)
    core = {min(allowed)}
    os.sched_setaffinity(0, core)
    hogs = [  # each its own session, as the sandbox is, so that autogroup scheduling shares fairly
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(2)
    ]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        os.sched_setaffinity(0, allowed)


def test_an_honest_case_on_a_busy_machine_is_ok(sandboxed, busy_core):
    timeout_s = 0.5
    executor = sandboxed(timeout_s=timeout_s)
    source = BURN + "import json, decimal, fractions  # some import work, as a real candidate has\n"
    results = executor.run(source, RUNNER, "burn", cases({"seconds": 0.3}, {"seconds": 0.3}))
    assert all(hog.poll() is None for hog in busy_core)  # the machine stayed busy throughout
    assert [(r.status, r.output) for r in results] == [("ok", 0.3), ("ok", 0.3)]
    assert all(0.3 <= r.cpu_s < timeout_s for r in results)
    # a wall-clock limit of timeout_s would have cut them: sharing the core, they took longer
    assert all(r.wall_s > timeout_s for r in results), [r.wall_s for r in results]


def test_a_limit_below_the_poll_interval_still_holds(sandboxed):
    # 2 ms of CPU allowed; the parent first looks after 10 ms, so a 6 ms case returns before any
    # parent check: its own CPU clock still makes it a timeout, and a 0 ms case stays ok
    executor = sandboxed(cpu_limit_s=0.002, timeout_s=1.0, wall_factor=50.0)
    results = executor.run(BURN, RUNNER, "burn", cases({"seconds": 0.006}, {"seconds": 0.0}))
    assert [r.status for r in results] == ["timeout", "ok"]
    assert results[0].error.startswith("exceeded the CPU-time limit of 0.002 s (used 0.0")  # CPU clocks tick coarsely
    assert results[0].output is None and results[0].cpu_s >= 0.006
