"""The default executor for untrusted code: one sandboxed child process per batch.

One child evaluates all the cases of a call, so the interpreter and the candidate's
imports are paid once per call, not once per case. Per child:

- a fresh directory (cwd, HOME and TMPDIR) holding a copy of ``harness.py`` and the
  candidate's ``stdout.txt``/``stderr.txt``; deleted afterwards. The harness reads what
  to run from its stdin: the runner and the limits when it starts, the program,
  entrypoint and payloads when its batch comes. With ``prestart`` (what the execute
  stage asks for) the next batch's child is started while this one runs and waits warm,
  runner loaded, for its request (``warm.py``);
- a scrubbed environment and the isolation of ``sandbox.py`` (bwrap, unshare or
  none; reported in every result's ``extra["isolation"]``);
- rlimits set by the harness before any candidate code runs: RLIMIT_AS = memory_mb,
  RLIMIT_NPROC = max_processes (counting the sandbox's own one or two helper processes;
  without root and without bwrap it counts all of the user's processes), RLIMIT_FSIZE =
  max_output_bytes (so stdout.txt, like every file the candidate writes, stays within
  it), RLIMIT_NOFILE, RLIMIT_CORE = 0 and RLIMIT_CPU as a last backstop for the whole
  child (load_limit_s plus every case's CPU limit, and two seconds);
- time limits that measure the candidate, not the machine. The child's life is a
  sequence of steps, each begun by an accepted event: starting the harness (until
  "ready": STARTUP_TIMEOUT_S of wall clock, trusted code only), loading the runner and
  the program (until "loaded": ``load_limit_s`` of CPU time), then each case (until its
  result: ``case_cpu_s``, i.e. ``cpu_limit_s`` or ``timeout_s``, of CPU time). So no
  case pays for the interpreter, numpy or the candidate's module-level code, nor for
  what came before it. A step's CPU time is what the parent reads in /proc for the
  sandbox's whole process tree (the launcher, the harness, every fork and thread; the
  reaped ones through their parents' cutime/cstime): the candidate cannot forge it, and
  a machine busy with other work does not inflate it. The parent polls it only while a
  step runs long, at intervals that shrink as the limit nears (the tree cannot use more
  than one CPU second per core per second). Each CPU-limited step also has a wall-clock
  backstop of ``wall_factor`` times its CPU limit, for candidates that sleep or block.
  Past any limit, the whole process group and pid namespace are SIGKILLed, and the
  step's cases get status ``timeout`` with an error naming the limit (CPU time or wall
  clock) and its value. Under isolation none, a grandchild that leaves the tree (see
  ``sandbox.py``) is no longer counted, as it is no longer killed. The load allowance
  is the candidate's too (module-level code may precompute, and request.json holds the
  payloads), so it is sized for imports, not for work.

Results come back over a pipe, one line per case as it finishes. (A results file would
be capped by RLIMIT_FSIZE along with the candidate's files, and a pipe wakes the parent
at once.) When the child dies, cases with a result keep it; the first case without one
gets the failure ("timeout", "memory" when stderr shows it, else "killed"); the rest run
again in a fresh child, so one hostile case does not sink the others. A failure while
importing the program (load_limit_s exceeded included) is the same for every case, so
it is given to all of them.

A candidate shares its process with the harness, so it can tamper with what the harness
reports about its own case (``transcript.py`` says what the parent accepts). That is
harmless because the suite's trusted scorer, in the parent, re-judges every output.

The docker executor (``docker.py``) reuses all of this with its own ``_launch``: a
container instead of a child, the container's cgroup as the CPU clock instead of /proc.

Linux only (pidfd, kernel 5.3 or later). Not bounded: the number of files a candidate creates in its directory (each at most
max_output_bytes) within its time; bubblewrap 0.8 has no size option for a tmpfs.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import partial
from typing import IO, Callable, Sequence

from schemas.configs import SandboxConfig
from suites.base import Case, CaseResult
from suites.executors.base import Executor, SandboxError
from suites.executors.channel import STARTUP_TIMEOUT_S, new_sandbox_dir, once, releaser, remove_tree, request_line, send_line, write_sandbox_files
from suites.executors.cpu_clock import tree_cpu_s
from suites.executors.sandbox import has_exited, plan_launch, resolve_isolation, sandbox_uid, start, stop
from suites.executors.steps import Cut, Limit, watch
from suites.executors.transcript import Record, Transcript
from suites.executors.warm import POOL, Started

_NOFILE = 256
_STDERR_TAIL_BYTES = 4096
_MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")


@dataclass(frozen=True)
class Child:
    """A started child: its process (for the docker executor, the engine's client), the
    read end of its results pipe, a pidfd of the process, the clock of the CPU time the
    sandbox used so far, and what kills all of it and closes the descriptors."""

    proc: subprocess.Popen
    read_fd: int
    pidfd: int
    cpu_s: Callable[[], float]
    stop: Callable[[], None]
    request_fd: int | None = None
    """The write end of the harness's stdin, where its request goes (None: the request
    went into the sandbox directory at launch, as for a container)."""
    end_request: Callable[[], None] = lambda: None
    """Close ``request_fd`` (once: its number may be reused right after)."""


@dataclass(frozen=True)
class _Ending:
    """How a child's run ended: killed past a limit (``cut``) or not, its exit status,
    and when we stopped watching it."""

    cut: Cut | None
    returncode: int | None
    at: float


class SubprocessExecutor(Executor):
    """Runs untrusted candidates in sandboxed children (see the module docstring).

    ``isolation`` forces a level (``bwrap``, ``unshare``, ``none``) instead of the
    strongest available one or $RATCHET_SANDBOX_ISOLATION; ``tmp_root`` is where the
    per-child directories are made (default: the system temp dir); ``prestart`` keeps
    a child for the next batch of the same runner started ahead (``warm.py``)."""

    name = "subprocess"

    def __init__(
        self, config: SandboxConfig = SandboxConfig(), *, isolation: str | None = None, tmp_root: str | None = None,
        prestart: bool = False,
    ) -> None:
        self.config = config
        self.isolation = resolve_isolation(isolation)
        self.tmp_root = os.path.realpath(tmp_root or tempfile.gettempdir())
        self.prestart = prestart
        self._config_json = config.model_dump_json()

    def run(self, program: str, runner: str, entrypoint: str, cases: Sequence[Case]) -> list[CaseResult]:
        pending = list(cases)
        results: list[CaseResult] = []
        while len(results) < len(pending):
            results += self._run_child(program, runner, entrypoint, pending[len(results) :])
        return results

    def _run_child(self, program: str, runner: str, entrypoint: str, cases: list[Case]) -> list[CaseResult]:
        """Evaluate ``cases`` in one fresh child: results for a prefix of them, at least one."""
        request = self._request(program, entrypoint, cases)
        warm = self._warm(runner)
        if warm is None:
            return self._run_started(self._start(runner, request), request, cases, runner)
        try:
            return self._run_started(warm, request, cases, runner)
        except SandboxError:  # it died while it waited, never ready: the batch gets a fresh child
            return self._run_started(self._start(runner, request), request, cases, runner)

    def _run_started(self, started: Started, request: dict, cases: list[Case], runner: str) -> list[CaseResult]:
        finished = False
        try:
            transcript, ending = self._supervise(started, request, cases, runner)
            finished = self._finished(transcript, ending.cut)
            return self._results(cases, transcript, ending, started.out, started.err)
        finally:
            if finished:
                POOL.retire(started)  # killed and cleaned up off this batch's path (``warm.py``)
            else:
                started.release()

    def _finished(self, transcript: Transcript, cut: Cut | None) -> bool:
        """A pre-starting executor's child whose batch has every outcome, within its
        limits: it is left to exit until the pool retires it (its ``returncode`` is then
        None; only a child that failed a case is asked for one)."""
        return self.prestart and cut is None and transcript.complete

    def _key(self, runner: str) -> tuple:
        return (type(self).__name__, self.isolation, self.tmp_root, self._config_json, runner)

    def _warm(self, runner: str) -> Started | None:
        """The pre-started child for this runner, if one waits and is still alive."""
        started = POOL.take(self._key(runner)) if self.prestart else None
        if started is not None and has_exited(started.child.pidfd):
            started.release()
            return None
        return started

    def _start(self, runner: str, request: dict | None) -> Started:
        """A new child in a new directory, its prelude sent (and ``request``, when the
        sandbox takes it only at launch)."""
        sandbox_dir = new_sandbox_dir(self.tmp_root, self.isolation)
        out = err = None
        try:
            out = open(os.path.join(sandbox_dir, "stdout.txt"), "w+b")
            err = open(os.path.join(sandbox_dir, "stderr.txt"), "w+b")
            child = self._launch(sandbox_dir, self._prelude(runner), request, out, err)
        except BaseException:
            for handle in (out, err):
                if handle is not None:
                    handle.close()
            remove_tree(sandbox_dir, self.isolation)
            raise
        stop_once = once(child.stop)
        return Started(sandbox_dir, out, err, child, stop_once, releaser(stop_once, out, err, sandbox_dir, self.isolation))

    def _prelude(self, runner: str) -> dict:
        """What a child needs before its batch: the runner and the config's limits."""
        config = self.config
        limits = {
            "RLIMIT_AS": [config.memory_mb * 1024 * 1024] * 2,
            "RLIMIT_NPROC": [config.max_processes] * 2,
            "RLIMIT_FSIZE": [config.max_output_bytes] * 2,
            "RLIMIT_NOFILE": [_NOFILE] * 2,
            "RLIMIT_CORE": [0, 0],
        }
        return {"runner": runner, "limits": limits, "max_output_bytes": config.max_output_bytes}

    def _request(self, program: str, entrypoint: str, cases: list[Case]) -> dict:
        cpu_s = self._cpu_backstop_s(len(cases))
        return {
            "program": program,
            "entrypoint": entrypoint,
            "cases": [{"case_id": case.case_id, "payload": case.payload} for case in cases],
            "cpu_limit": [cpu_s, cpu_s + 1],  # RLIMIT_CPU: SIGXCPU first, SIGKILL a second later
        }

    def _cpu_backstop_s(self, n_cases: int) -> int:
        """RLIMIT_CPU of a child: what the parent's limits allow it in all, and more."""
        return math.ceil(self.config.load_limit_s + self.config.case_cpu_s * n_cases) + 2

    def _limit(self, transcript: Transcript) -> Limit:
        """The allowance of the step the child is in (see the module docstring)."""
        config = self.config
        if not transcript.ready:
            return Limit(None, STARTUP_TIMEOUT_S)
        if not transcript.loaded:
            return Limit(config.load_limit_s, config.wall_factor * config.load_limit_s)
        return Limit(config.case_cpu_s, config.case_wall_s)

    def _supervise(
        self, started: Started, request: dict, cases: list[Case], runner: str
    ) -> tuple[Transcript, _Ending]:
        """Hand the child its request, read its events until done, and kill what is left
        of it (a finished batch's child is the pool's to kill). With ``prestart``, the next
        batch's child starts once this one has its work."""
        child, transcript = started.child, Transcript(cases, self.config.max_output_bytes)
        try:
            if child.request_fd is not None:
                send_line(child.request_fd, request_line(request))
                child.end_request()
            if self.prestart:
                POOL.prestart(self._key(runner), partial(self._start, runner, None))
            cut = watch(child.read_fd, child.pidfd, child.cpu_s, transcript, self._limit)
            ending_at = time.monotonic()
        except BaseException:
            started.stop()
            raise
        if not self._finished(transcript, cut):
            started.stop()
        return transcript, _Ending(cut, child.proc.returncode, ending_at)

    def _launch(self, sandbox_dir: str, prelude: dict, request: dict | None, out: IO[bytes], err: IO[bytes]) -> Child:
        """Write the harness and start it under ``self.isolation``, its prelude on its
        stdin (the request follows there; ``request`` is for launchers that need it now)."""
        uid = sandbox_uid()
        read_fd, write_fd = os.pipe()
        stdin_read, stdin_write = os.pipe()
        plan = plan_launch(self.isolation, sandbox_dir, write_fd)
        try:
            write_sandbox_files(sandbox_dir, None)
            if uid is not None:
                os.chown(sandbox_dir, uid, uid)
            proc = start(plan, sandbox_dir, write_fd, out, err, stdin=stdin_read)
        except BaseException:
            os.close(read_fd)
            os.close(stdin_write)
            raise
        finally:
            plan.close()
            os.close(write_fd)
            os.close(stdin_read)
        pidfd = os.pidfd_open(proc.pid)
        send_line(stdin_write, request_line({**prelude, "sys_path": plan.sys_path, "drop_to": uid}))
        end_request = once(partial(os.close, stdin_write))

        def stop_child() -> None:
            try:
                stop(proc, pidfd, self.isolation, uid)
            finally:
                os.close(pidfd)
                os.close(read_fd)
                end_request()

        return Child(proc, read_fd, pidfd, partial(tree_cpu_s, proc.pid), stop_child, stdin_write, end_request)

    def _results(
        self, cases: list[Case], transcript: Transcript, ending: _Ending, out: IO[bytes], err: IO[bytes]
    ) -> list[CaseResult]:
        """One result per case the child finished, plus the failure of the case it was
        running when it ended (of every case, when it ended while loading the program)."""
        stdout_bytes = os.fstat(out.fileno()).st_size
        extra: dict = {"executor": self.name, "isolation": self.isolation, "stdout_bytes": stdout_bytes}
        if transcript.violations:
            extra["protocol_violations"] = transcript.violations
        if transcript.load_failure is not None:
            status, error = transcript.load_failure
            error = f"loading the program: {error}"
            return [CaseResult(case.case_id, status, error=error, extra=dict(extra)) for case in cases]
        results = [_within_limit(_case_result(case, record, extra), self.config.case_cpu_s)
                   for case, record in zip(cases, transcript.records)]
        if len(results) == len(cases):
            return results
        stderr_tail = _tail(err)
        if not transcript.ready:
            raise SandboxError(
                f"the sandbox harness did not start (isolation {self.isolation}, exit status {ending.returncode}, "
                f"timed out: {ending.cut is not None}): {stderr_tail.strip() or 'no stderr'}"
            )
        status, error = self._failure(ending, stderr_tail, len(cases))
        failed = dict(extra, stderr_tail=stderr_tail[-1000:])
        wall_s = ending.at - transcript.last_event_at
        cpu_s = None if ending.cut is None else ending.cut.cpu_s
        if not transcript.loaded:
            error = f"loading the program: {error}"
            return [
                CaseResult(case.case_id, status, error=error, wall_s=wall_s, cpu_s=cpu_s, extra=dict(failed))
                for case in cases
            ]
        failure = CaseResult(cases[len(results)].case_id, status, error=error, wall_s=wall_s, cpu_s=cpu_s, extra=failed)
        return results + [failure]

    def _failure(self, ending: _Ending, stderr_tail: str, n_cases: int) -> tuple[str, str]:
        """Status and reason for the case that was running when the child ended (one of
        ``n_cases`` the child was given)."""
        if ending.cut is not None:
            return "timeout", ending.cut.reason
        signum = _signal_number(ending.returncode, self.isolation)
        if signum == signal.SIGXCPU:
            return "timeout", (
                f"exceeded the CPU-time limit of {self._cpu_backstop_s(n_cases)} s for the whole child (RLIMIT_CPU "
                "backstop); the sandbox was killed"
            )
        how = f"was killed by {_signal_name(signum)}" if signum else f"exited with code {ending.returncode}"
        status = "memory" if any(marker in stderr_tail for marker in _MEMORY_MARKERS) else "killed"
        lines = [line for line in stderr_tail.splitlines() if line.strip()]
        stderr = f"; stderr: {lines[-1][:300]}" if lines else ""
        return status, f"the sandbox process {how} before the case returned (os._exit, a crash or a kill){stderr}"


def _case_result(case: Case, record: Record, extra: dict) -> CaseResult:
    return CaseResult(
        case_id=case.case_id,
        status=record.status,  # type: ignore[arg-type]  # validated by Transcript
        output=record.output,
        error=record.error,
        wall_s=record.observed_s if record.wall_s is None else record.wall_s,
        cpu_s=record.cpu_s,
        peak_rss_mb=record.peak_rss_mb,
        extra=dict(extra),
    )


def _within_limit(result: CaseResult, limit_s: float | None) -> CaseResult:
    """A case that returned before the parent's next CPU check but, by the harness's own
    clock, used more than its limit is a timeout all the same, so a limit below the poll
    interval still holds. (A candidate that forges that clock lower gains at most the one
    poll interval the parent's own check allows anyway.)"""
    if limit_s is None or result.status != "ok" or result.cpu_s is None or result.cpu_s <= limit_s:
        return result
    error = (f"exceeded the CPU-time limit of {limit_s:g} s (used {result.cpu_s:.4f} s of CPU in the case, by the "
             "harness's clock; it returned before the parent's next check)")
    return CaseResult(result.case_id, "timeout", error=error, wall_s=result.wall_s, cpu_s=result.cpu_s,
                      peak_rss_mb=result.peak_rss_mb, extra=result.extra)


def _tail(handle: IO[bytes]) -> str:
    """The last few KB of a file the candidate wrote, read through our own descriptor."""
    size = os.fstat(handle.fileno()).st_size
    start_at = max(0, size - _STDERR_TAIL_BYTES)
    return os.pread(handle.fileno(), size - start_at, start_at).decode(errors="replace")


def _signal_number(returncode: int, isolation: str) -> int | None:
    """The signal that ended the child: a negative code, or bwrap's (docker's) 128 + signal."""
    if returncode < 0:
        return -returncode
    if isolation in ("bwrap", "docker") and 128 < returncode < 128 + signal.NSIG:
        return returncode - 128
    return None


def _signal_name(signum: int | None) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
