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

The pool has one thread of its own, which lives as long as the process, and does two
things there so that the batch's thread does not wait for them:

- it starts the children to be kept (``prestart``). Besides taking the start off the
  batch's path, this is what keeps them alive: bwrap's ``--die-with-parent`` is
  PR_SET_PDEATHSIG, which fires when the *thread* that started the child ends, not the
  process. A child pre-started by the execute stage's worker thread was killed when that
  thread ended with its round, so the first batch of every round and every holdout batch
  found none waiting and paid a cold start (about 45 ms each at the 1 ms overhead
  benchmark);
- it kills and cleans up a child whose batch has every result (``retire``): the
  namespace's teardown takes 2-3 ms that the next batch need not wait for. Until then the
  child is what it was, in its sandbox under its rlimits, with nothing left to run but
  the harness's exit (and whatever exit hooks the candidate registered).

``settle`` waits until the thread has done what it was given."""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, Callable, Hashable

MAX_IDLE = 4
log = logging.getLogger(__name__)


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
    """The idle pre-started children of this process, by key (each a future while its
    start is under way on the pool's thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: OrderedDict[Hashable, Future[Started]] = OrderedDict()
        self._pid = os.getpid()
        self._thread: ThreadPoolExecutor | None = None
        atexit.register(self.close)

    def prestart(self, key: Hashable, start: Callable[[], Started]) -> None:
        """Run ``start`` on the pool's thread and keep its child for the next batch of
        ``key``, dropping what it replaces. Returns at once."""
        started = self._submit(start)
        with self._lock:
            dropped = [self._idle.pop(key)] if key in self._idle else []
            self._idle[key] = started
            while len(self._idle) > MAX_IDLE:
                dropped.append(self._idle.popitem(last=False)[1])
        for old in dropped:
            old.add_done_callback(_release)

    def take(self, key: Hashable) -> Started | None:
        """The idle child for ``key``, now the caller's; None when there is none or its
        start failed (the caller then starts one itself, and meets the error there)."""
        with self._lock:
            self._forget_if_forked()
            started = self._idle.pop(key, None)
        if started is None or started.exception() is not None:
            return None
        return started.result()

    def retire(self, started: Started) -> None:
        """Kill ``started`` and remove its directory on the pool's thread; a failure is
        logged (its batch has returned: nothing is left to fail)."""
        self._submit(started.release).add_done_callback(_warn_if_failed)

    def settle(self) -> None:
        """Wait until the pool's thread has done everything it was given so far."""
        self._submit(lambda: None).result()

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Kill every idle child and remove its directory (once each has started)."""
        with self._lock:
            self._forget_if_forked()
            dropped, self._idle = list(self._idle.values()), OrderedDict()
        for started in dropped:
            _release(started)
        if self._thread is not None:
            try:
                self.settle()  # the retired children too
            except RuntimeError:
                pass  # at interpreter exit: the thread already did all it was given, then ended

    def _submit(self, work: Callable[[], object]) -> Future:
        with self._lock:
            self._forget_if_forked()
            if self._thread is None:
                self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ratchet-sandbox-pool")
            return self._thread.submit(work)

    def _forget_if_forked(self) -> None:
        if os.getpid() != self._pid:  # the parent's children and thread are not ours
            self._idle, self._pid, self._thread = OrderedDict(), os.getpid(), None


def _warn_if_failed(retired: Future) -> None:
    if retired.exception() is not None:
        log.warning("a finished sandbox could not be cleaned up: %r", retired.exception())


def _release(started: Future[Started]) -> None:
    """Release the child of a finished start (a failed start left nothing behind)."""
    if started.exception() is None:
        started.result().release()


POOL = WarmPool()
"""This process's pool."""
