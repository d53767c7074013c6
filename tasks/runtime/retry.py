"""Retry policy shared by every stage: only transient errors (I/O, S3, network, a
rate-limited LLM endpoint) are retried. A candidate's crash is data, not an error.

The backoff is one list of delays, `RATCHET_RETRY_DELAYS_S` (comma-separated seconds,
default ``1,4,16``: 4 attempts over at least 21 s), read once when the stages are
defined. Prefect retries a failed stage after each delay; recording a run's `failed`
event (`lifecycle.recorded_failure`) retries after the same delays, so an outage
longer than a stage's retries is still recorded if it ends within them again."""

from __future__ import annotations

import os
import time
from typing import Callable, Sequence, TypeVar

from storage.errors import is_transient
from tasks.proposers.base import TransientProposerError
from tasks.runtime.prefect_states import remember_failed_stage, stage_run_name

T = TypeVar("T")

DEFAULT_DELAYS_S = (1.0, 4.0, 16.0)
MAX_RETRIES = 10
MAX_DELAY_S = 600.0


def retry_delays(value: str | None) -> list[float]:
    """The delays of `RATCHET_RETRY_DELAYS_S` (``value``; None or empty: the default).
    At most 10 delays of 0-600 s each, so the total is bounded."""
    if not value or not value.strip():
        return list(DEFAULT_DELAYS_S)
    try:
        delays = [float(part) for part in value.split(",")]
    except ValueError:
        raise ValueError(f"RATCHET_RETRY_DELAYS_S={value!r}: use comma-separated seconds, e.g. 1,4,16") from None
    if len(delays) > MAX_RETRIES or any(not 0 <= d <= MAX_DELAY_S for d in delays):
        raise ValueError(f"RATCHET_RETRY_DELAYS_S={value!r}: at most {MAX_RETRIES} delays of 0-{MAX_DELAY_S:g} s each")
    return delays


RETRY_DELAYS_S = retry_delays(os.environ.get("RATCHET_RETRY_DELAYS_S"))
RETRIES = len(RETRY_DELAYS_S)


def is_retryable(exc: BaseException) -> bool:
    """Whether a retry of the failed call may succeed (storage or proposer transient)."""
    return isinstance(exc, TransientProposerError) or is_transient(exc)


def retry_transient(task, task_run, state) -> bool:
    """Prefect `retry_condition_fn`: retry iff the failure was transient."""
    try:
        state.result()
    except Exception as exc:  # classified, then re-raised by Prefect if not retried
        return is_retryable(exc)
    return False


def with_retries(call: Callable[[], T], delays: Sequence[float] = RETRY_DELAYS_S,
                 sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()``, called again after each delay while it fails with a transient error;
    the last failure (or any other error) propagates."""
    for delay in delays:
        try:
            return call()
        except Exception as exc:
            if not is_retryable(exc):
                raise
        sleep(delay)
    return call()


STAGE_OPTIONS = dict(retries=RETRIES, retry_delay_seconds=RETRY_DELAYS_S, retry_condition_fn=retry_transient,
                     task_run_name=stage_run_name, on_failure=[remember_failed_stage])
"""Every stage's Prefect options: transient retries, named `<stage> r<round>`, and its
final failure remembered so the run's failed state names the stage."""
