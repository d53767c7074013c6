"""The clocks of a sandboxed child's steps: each accepted event (ready, loaded, a result)
begins a step with its allowance, CPU time of the sandbox's process tree and a wall-clock
backstop; ``watch`` reads the child's events and cuts it when a step runs past its
allowance (see ``subprocess.py``'s docstring)."""

from __future__ import annotations

import math
import os
import select
import time
from dataclasses import dataclass
from typing import Callable, Literal

from suites.executors.transcript import Transcript

_MIN_POLL_S = 0.01
_CPUS = os.cpu_count() or 1
_READ_BYTES = 1 << 20


@dataclass(frozen=True)
class Limit:
    """One step's allowance, counted from the event that began it: CPU seconds of the
    sandbox's process tree (None: not limited) and a wall-clock backstop."""

    cpu_s: float | None
    wall_s: float


@dataclass(frozen=True)
class Cut:
    """Why the parent killed a child: the limit (``clock``, ``limit_s``) its step
    exceeded, and the CPU and wall time the step had used."""

    clock: Literal["cpu", "wall"]
    limit_s: float
    cpu_s: float | None
    wall_s: float

    @property
    def reason(self) -> str:
        if self.clock == "cpu":
            return (
                f"exceeded the CPU-time limit of {self.limit_s:g} s (used {self.cpu_s:.2f} s of CPU in "
                f"{self.wall_s:.2f} s of wall clock); the sandbox was killed"
            )
        used = "" if self.cpu_s is None else f"; used {self.cpu_s:.2f} s of CPU"
        return f"exceeded the wall-clock limit of {self.limit_s:g} s (backstop{used}); the sandbox was killed"


def watch(
    read_fd: int, pidfd: int, cpu_of: Callable[[], float], transcript: Transcript, limit_of: Callable[[Transcript], Limit]
) -> Cut | None:
    """Read events until every case has its outcome, the child ends (then None), or the
    current step exceeds a limit (then the cut). Each accepted event (ready, loaded, a
    result) begins the next step, with the allowance ``limit_of`` gives it."""
    os.set_blocking(read_fd, False)
    step = _Step(cpu_of, limit_of(transcript))
    watched = [read_fd, pidfd]
    while not transcript.complete:
        cut, wait = step.check()
        if cut is not None:
            return cut
        readable = select.select(watched, [], [], wait)[0]
        if read_fd in readable:
            try:
                chunk = os.read(read_fd, _READ_BYTES)
            except BlockingIOError:
                continue
            if not chunk:
                watched = [pidfd]  # every writer closed the pipe; wait for the child to end
            elif transcript.feed(chunk) and not transcript.complete:
                step = _Step(cpu_of, limit_of(transcript))
        elif pidfd in readable:
            return None
    return None


class _Step:
    """The clocks of one step: wall time since it began and, when its limit has one,
    the CPU time the sandbox's process tree used since then."""

    def __init__(self, cpu_of: Callable[[], float], limit: Limit) -> None:
        self.cpu_of = cpu_of
        self.limit = limit
        self.started = time.monotonic()
        self.cpu_start = 0.0 if limit.cpu_s is None else cpu_of()
        self.cpu_used = 0.0
        self.poll_at = self.started + self._poll_interval()

    def _poll_interval(self) -> float:
        """Time before the tree could possibly reach the CPU limit (all cores busy)."""
        if self.limit.cpu_s is None:
            return math.inf
        return max((self.limit.cpu_s - self.cpu_used) / _CPUS, _MIN_POLL_S)

    def check(self) -> tuple[Cut | None, float]:
        """The cut when a limit is exceeded, else None and how long to wait before the
        next check (a limit could be reached then at the earliest)."""
        now = time.monotonic()
        wall = now - self.started
        limit = self.limit
        if now >= self.poll_at:
            self.cpu_used = max(0.0, self.cpu_of() - self.cpu_start)
            if limit.cpu_s is not None and self.cpu_used >= limit.cpu_s:
                return Cut("cpu", limit.cpu_s, self.cpu_used, wall), 0.0
            self.poll_at = now + self._poll_interval()
        if wall >= limit.wall_s:
            cpu = None if limit.cpu_s is None else max(0.0, self.cpu_of() - self.cpu_start)
            return Cut("wall", limit.wall_s, cpu, wall), 0.0
        return None, min(limit.wall_s - wall, self.poll_at - now)
