"""Pre-started children (suites/executors/warm.py): the next batch's sandbox is started
while this one runs, and is an ordinary fresh sandbox all the same."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from schemas.configs import SandboxConfig
from suites.base import Case
from suites.executors import SubprocessExecutor, make_executor
from suites.executors.channel import sweep_orphans
from suites.executors.warm import POOL, Started
from tests.suites.executors.processes import sandbox_processes

RUNNER = "def run(fn, payload):\n    return fn(**payload)\n"
WHERE = "import os\n\ndef solve(name):\n    open(name, 'w').write('left behind')\n    return [os.getcwd(), sorted(os.listdir('.'))]\n"


def cases(*payloads: dict) -> list[Case]:
    return [Case(f"case-{index}", "train", payload) for index, payload in enumerate(payloads)]


@pytest.fixture
def warm(sandbox_root):
    """A pre-starting executor under the strongest isolation here; the pool is emptied after."""
    POOL.close()
    yield SubprocessExecutor(SandboxConfig(timeout_s=2.0), tmp_root=sandbox_root, prestart=True)
    POOL.close()


def _dirs(root: str) -> list[str]:
    return sorted(os.path.join(root, name) for name in os.listdir(root))


def test_the_next_batch_runs_in_the_child_started_during_this_one(warm, sandbox_root):
    first = warm.run(WHERE, RUNNER, "solve", cases({"name": "a.txt"}))[0]
    assert first.status == "ok", first.error
    POOL.settle()  # the pool's thread has started the next child and retired the first
    waiting = _dirs(sandbox_root)
    assert len(waiting) == 1 and waiting[0] != first.output[0]  # first's directory is gone, one waits
    assert len(sandbox_processes(sandbox_root)) >= 1  # the waiting child is alive
    second = warm.run(WHERE, RUNNER, "solve", cases({"name": "b.txt"}))[0]
    assert second.output[0] == waiting[0]  # it ran in the child that was waiting
    assert second.output[1] == ["b.txt", "harness.py", "stderr.txt", "stdout.txt"]  # nothing of the first batch
    POOL.settle()
    assert len(_dirs(sandbox_root)) == 1 and _dirs(sandbox_root) != waiting


def test_the_child_started_ahead_outlives_the_thread_whose_batch_started_it(warm, sandbox_root):
    # bwrap's --die-with-parent fires when the *thread* that started the child ends: the
    # execute stage's worker threads end with their round, and its next batch found no child.
    with ThreadPoolExecutor(max_workers=1) as round_threads:
        assert round_threads.submit(warm.run, WHERE, RUNNER, "solve", cases({"name": "a.txt"})).result()[0].status == "ok"
    POOL.settle()
    waiting = _dirs(sandbox_root)
    assert len(waiting) == 1 and len(sandbox_processes(sandbox_root)) >= 1
    second = warm.run(WHERE, RUNNER, "solve", cases({"name": "b.txt"}))[0]
    assert second.output[0] == waiting[0]  # the next round's first batch ran in it


def test_a_retired_child_that_cannot_be_cleaned_up_is_reported(warm, caplog):
    def fails() -> None:
        raise PermissionError("the directory is not ours")

    POOL.retire(Started("/nowhere", None, None, None, fails, fails))  # type: ignore[arg-type]
    POOL.settle()
    assert "could not be cleaned up: PermissionError('the directory is not ours')" in caplog.text


def test_closing_the_pool_leaves_no_process_and_no_directory(warm, sandbox_root):
    assert warm.run(WHERE, RUNNER, "solve", cases({"name": "a.txt"}))[0].status == "ok"
    assert POOL.idle() == 1
    POOL.close()
    assert POOL.idle() == 0 and _dirs(sandbox_root) == [] and sandbox_processes(sandbox_root) == []


def test_limits_hold_in_a_prestarted_child(warm):
    spin = "def solve(spin):\n    while spin:\n        pass\n    return 'done'\n"
    executor = SubprocessExecutor(SandboxConfig(timeout_s=0.3, wall_factor=10.0), tmp_root=warm.tmp_root, prestart=True)
    executor.run(spin, RUNNER, "solve", cases({"spin": False}))  # the next child now waits
    results = executor.run(spin, RUNNER, "solve", cases({"spin": False}, {"spin": True}, {"spin": False}))
    assert [r.status for r in results] == ["ok", "timeout", "ok"]
    assert "CPU-time limit of 0.3 s" in results[1].error


def test_a_waiting_child_that_died_is_replaced(warm, sandbox_root):
    assert warm.run(WHERE, RUNNER, "solve", cases({"name": "a.txt"}))[0].status == "ok"
    POOL.settle()
    for pid in sandbox_processes(sandbox_root):
        os.kill(pid, signal.SIGKILL)
    results = warm.run("def solve(x):\n    return x * 2\n", RUNNER, "solve", cases({"x": 2}, {"x": 5}))
    assert [(r.status, r.output) for r in results] == [("ok", 4), ("ok", 10)]


def test_a_runner_that_fails_to_load_fails_every_case_of_the_batch(warm):
    broken = "raise ImportError('no such runner module')\n"
    for _ in range(2):  # cold, then from the child that loaded the broken runner ahead
        results = warm.run("def solve(x):\n    return x\n", broken, "solve", cases({"x": 1}, {"x": 2}))
        assert [r.status for r in results] == ["error", "error"]
        assert all("loading the program: ImportError: no such runner module" in r.error for r in results)


def test_another_runner_gets_its_own_child(warm, sandbox_root):
    other = RUNNER + "# another runner\n"
    assert warm.run(WHERE, RUNNER, "solve", cases({"name": "a.txt"}))[0].status == "ok"
    assert warm.run(WHERE, other, "solve", cases({"name": "a.txt"}))[0].status == "ok"
    POOL.settle()
    assert POOL.idle() == 2 and len(_dirs(sandbox_root)) == 2


def test_only_asked_for_and_never_for_containers(monkeypatch):
    assert make_executor(SandboxConfig()).prestart is False
    assert make_executor(SandboxConfig(), prestart=True).prestart is True
    monkeypatch.setenv("RATCHET_SANDBOX_PRESTART", "0")
    assert make_executor(SandboxConfig(), prestart=True).prestart is False


KILLED_PARENT = """
import os, signal, sys
from schemas.configs import SandboxConfig
from suites.base import Case
from suites.executors import SubprocessExecutor
executor = SubprocessExecutor(SandboxConfig(timeout_s=2.0), tmp_root=sys.argv[1], prestart=True)
assert executor.run("def solve(x):\\n    return x\\n", sys.argv[2], "solve", [Case("c", "train", {"x": 1})])[0].output == 1
os.kill(os.getpid(), signal.SIGKILL)  # no atexit: the waiting child's directory stays behind
"""


def test_what_a_killed_parent_left_is_swept_by_the_next_one(sandbox_root):
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    done = subprocess.run([sys.executable, "-c", KILLED_PARENT, sandbox_root, RUNNER], cwd=repo,
                          env={**os.environ, "PYTHONPATH": repo}, capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = _dirs(sandbox_root)
    # the waiting child's, and the finished batch's when the pool had not yet retired it
    assert 1 <= len(left) <= 2 and all(os.path.basename(path).startswith("ratchet-sbx-") for path in left)
    namespace = os.stat("/proc/self/ns/pid").st_ino
    mine = tempfile.mkdtemp(prefix=f"ratchet-sbx-{namespace}.{os.getpid()}-", dir=sandbox_root)  # a live parent's
    elsewhere = tempfile.mkdtemp(prefix=f"ratchet-sbx-{namespace + 1}.999999999-", dir=sandbox_root)  # another namespace's
    assert sorted(sweep_orphans(sandbox_root, "bwrap")) == left
    assert _dirs(sandbox_root) == sorted([mine, elsewhere])
