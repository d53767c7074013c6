"""Children started ahead of their batch: the next batch's sandbox starts while this one runs.

A sandboxed child's start (bwrap's namespaces, the interpreter, the harness, the runner
and what it imports: about 17 ms for a plain runner, 70 ms with numpy) used to sit on
the critical path of every candidate batch. When the subprocess executor is asked to
pre-start (the execute stage asks), it starts the *next* child for the same runner and
limits as soon as the current one has its request, so that start runs beside the
current batch and the parent's own work, and the next batch finds a child that has
already loaded the runner and waits for its request on stdin (``harness.py``).

Nothing about the sandbox changes: a pre-started child is an ordinary one, made exactly
as before (its own fresh directory, namespaces, scrubbed environment, rlimits applied
and uid dropped before any candidate code exists), used for one batch and killed after
it. Only when it is made differs. No candidate code runs in it until the request comes;
its limits are charged from the request on, as they always were from "ready".

At most one idle child per key (executor class, isolation, directory root, sandbox
config, runner) and ``MAX_IDLE`` in all wait in this process; the oldest goes first.
They are killed and their directories removed at exit (``close``), and a child whose
parent died reads the end of its stdin and exits (bwrap also has --die-with-parent).
A forked process (a Dask worker started by fork) drops what it inherited without
touching it: those children belong to the parent.

Children to be kept are started on the pool's own long-lived thread (``launch``), not on
the batch's. bwrap's ``--die-with-parent`` is PR_SET_PDEATHSIG, which fires when the
*thread* that started the child ends, not the process: a child pre-started by the
execute stage's worker thread was killed when that thread ended with its round, so the
first batch of every round and every holdout batch found no child waiting and paid a
cold start (about 45 ms each at the 1 ms overhead benchmark)."""

from __future__ import annotations

import atexit
import os
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Callable, Hashable

MAX_IDLE = 4


@dataclass
class Started:
    """A started child with its directory and output files; ``stop`` kills it,
    ``release`` also removes the directory (both idempotent)."""

    sandbox_dir: str
    out: IO[bytes]
    err: IO[bytes]
    child: object
    """The executor's ``Child``."""
    stop: Callable[[], None]
    release: Callable[[], None]


class WarmPool:
    """The idle pre-started children of this process, by key."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: OrderedDict[Hashable, Started] = OrderedDict()
        self._pid = os.getpid()
        self._launcher: ThreadPoolExecutor | None = None
        atexit.register(self.close)

    def launch(self, start: Callable[[], Started]) -> Started:
        """``start()`` run on this pool's own thread, which lives as long as the process,
        so the child it starts outlives the caller's thread (see the module docstring).
        Returns its result or raises its error."""
        with self._lock:
            self._forget_if_forked()
            if self._launcher is None:
                self._launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ratchet-sandbox-start")
            launcher = self._launcher
        return launcher.submit(start).result()

    def take(self, key: Hashable) -> Started | None:
        """The idle child for ``key``, now the caller's; None when there is none."""
        with self._lock:
            self._forget_if_forked()
            return self._idle.pop(key, None)

    def offer(self, key: Hashable, started: Started) -> None:
        """Keep ``started`` for the next batch of ``key``, dropping what it replaces."""
        with self._lock:
            self._forget_if_forked()
            dropped = [self._idle.pop(key)] if key in self._idle else []
            self._idle[key] = started
            while len(self._idle) > MAX_IDLE:
                dropped.append(self._idle.popitem(last=False)[1])
        for old in dropped:
            old.release()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Kill every idle child and remove its directory."""
        with self._lock:
            self._forget_if_forked()
            dropped, self._idle = list(self._idle.values()), OrderedDict()
        for started in dropped:
            started.release()

    def _forget_if_forked(self) -> None:
        if os.getpid() != self._pid:  # the parent's launcher thread does not exist here
            self._idle, self._pid, self._launcher = OrderedDict(), os.getpid(), None


POOL = WarmPool()
"""This process's pool."""
