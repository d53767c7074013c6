"""Retry policy shared by every stage: only transient errors (I/O, S3, network, a
rate-limited LLM endpoint) are retried. A candidate's crash is data, not an error."""

from __future__ import annotations

from storage.errors import is_transient
from tasks.proposers.base import TransientProposerError
from tasks.runtime.prefect_states import remember_failed_stage, stage_run_name

RETRIES = 3
RETRY_DELAYS_S = [1, 4, 16]


def retry_transient(task, task_run, state) -> bool:
    """Prefect `retry_condition_fn`: retry iff the failure was transient."""
    try:
        state.result()
    except TransientProposerError:
        return True
    except Exception as exc:  # classified, then re-raised by Prefect if not retried
        return is_transient(exc)
    return False


STAGE_OPTIONS = dict(retries=RETRIES, retry_delay_seconds=RETRY_DELAYS_S, retry_condition_fn=retry_transient,
                     task_run_name=stage_run_name, on_failure=[remember_failed_stage])
"""Every stage's Prefect options: transient retries, named `<stage> r<round>`, and its
final failure remembered so the run's failed state names the stage."""
