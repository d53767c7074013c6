"""Where queued candidate logs are written: one writer process per process that queues.

``MlflowTracker.log_candidate(background=True)`` queues a candidate for later so that
logging overlaps the next round. MLflow's client is pure Python (SQLAlchemy): written
from a thread of the flow's own process, it holds the GIL for about 20 ms per candidate,
and the execute stage's threads, which hand batches to the sandbox and read their
results, wait for it at every hand-over (measured here: a 30-case batch of 1 ms cases
took 4 to 19 ms longer beside a busy thread, 2 to 3 ms beside a busy process). So the
queue is written by a separate process, started (spawned, so nothing of the flow's
threads is inherited) on first use and kept for the life of this process, at a lower
CPU priority: its work is never on an evaluation's critical path.

The writer runs ``MlflowTracker.log_candidate`` itself, so what lands in MLflow is
exactly what the foreground call writes. Its trackers are per ``generation``: this
process bumps it (``bump``) at every flush and before it writes child runs itself, so
the writer never trusts a cache of child runs older than that, and never creates a
candidate's run twice. A process that may not have children (a daemonic one) writes
from a thread instead, as before.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, Callable

WRITER_NICE = 5
"""Added to the writer process's niceness."""

_lock = threading.Lock()
_pool: Executor | None = None
_generation = 0
_trackers: dict[tuple[str, int], Any] = {}
"""In the writer process: its tracker per (tracking URI, generation)."""


def submit(tracking_uri: str, *args: Any) -> Future:
    """Queue ``log_candidate(*args)`` on the writer of this process."""
    return _writer().submit(log_in_writer, tracking_uri, _generation, *args)


def bump() -> None:
    """This process is about to write child runs itself, or has waited for the queue: the
    writer's caches of child runs are stale from here on."""
    global _generation
    with _lock:
        _generation += 1


def log_in_writer(tracking_uri: str, generation: int, *args: Any) -> str | None:
    """The writer's side: log one candidate with the tracker of this generation."""
    from storage.tracking import MlflowTracker

    key = (tracking_uri, generation)
    if key not in _trackers:
        for old in [k for k in _trackers if k[0] == tracking_uri]:
            del _trackers[old]
        _trackers[key] = MlflowTracker(tracking_uri)
    return _trackers[key].log_candidate(*args)


def _writer() -> Executor:
    global _pool
    with _lock:
        if _pool is None or getattr(_pool, "_broken", False):
            _pool = _new_pool(_lower_priority)
        return _pool


def _new_pool(initializer: Callable[[], None]) -> Executor:
    if multiprocessing.current_process().daemon:  # may not have children
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="ratchet-mlflow")
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=initializer)


def _lower_priority() -> None:
    os.nice(WRITER_NICE)
