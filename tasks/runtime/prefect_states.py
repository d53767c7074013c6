"""What Prefect shows of a Ratchet run: task runs named by stage and round
(``execute r0003``), a failed run's state naming the run, the stage, the round and the
cause, and the flow runs a resume supersedes marked crashed instead of left running."""

from __future__ import annotations

import logging
import threading
from typing import Sequence

from prefect.runtime import flow_run, task_run

from schemas.rows import RunRow

log = logging.getLogger(__name__)

_failed_stage: dict[str, str] = {}  # flow run id -> name of its last failed task run
_lock = threading.Lock()

_ROUND_PARAMETERS = (("round_index", "r{:04d}"), ("chunk", "chunk {:04d}"))


class StageFailed(RuntimeError):
    """A stage of a Ratchet run failed; the message names the run, stage, round and cause."""


def stage_run_name() -> str:
    """Prefect `task_run_name` of every stage: the stage and its round (or chunk)."""
    parameters = task_run.parameters
    for name, label in _ROUND_PARAMETERS:
        value = parameters.get(name)
        if isinstance(value, int):
            return f"{task_run.task_name} {label.format(value)}"
    return task_run.task_name


def remember_failed_stage(task, run, state) -> None:
    """Prefect `on_failure` hook of every stage (after its retries): remember which
    stage failed in the flow run, so the run's failure can name it."""
    with _lock:
        _failed_stage[str(run.flow_run_id)] = run.name


def with_stage(run_id: str, exc: BaseException) -> BaseException:
    """The error a failed run reports: `exc` wrapped in a `StageFailed` that names the
    stage (and round) that failed, or `exc` itself when no stage of this flow run failed."""
    with _lock:
        stage = _failed_stage.pop(str(flow_run.get_id()), None)
    if stage is None or isinstance(exc, StageFailed):
        return exc
    return StageFailed(f"ratchet run {run_id}: stage {stage} failed: {type(exc).__name__}: {exc}")


def failure_reason(failure: BaseException) -> str:
    return str(failure) if isinstance(failure, StageFailed) else f"{type(failure).__name__}: {failure}"


def supersede_flow_runs(events: Sequence[RunRow], run_id: str) -> list[str]:
    """Mark the earlier flow runs of a resumed run crashed when Prefect still shows them
    running (a process killed with SIGKILL never reports). Best effort: Prefect being
    unreachable never stops a resume. Returns the flow run ids marked."""
    current = flow_run.get_id()
    earlier = {e.prefect_flow_run_id for e in events if e.prefect_flow_run_id and e.prefect_flow_run_id != current}
    if not earlier:
        return []
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    marked = []
    try:
        with get_client(sync_client=True) as client:
            for flow_run_id in sorted(earlier):
                state = client.read_flow_run(flow_run_id).state
                if state is not None and state.is_running():
                    message = f"superseded: ratchet run {run_id} was resumed in flow run {current}"
                    client.set_flow_run_state(flow_run_id, Crashed(message=message), force=True)
                    marked.append(flow_run_id)
    except Exception as exc:  # Prefect's API is the operator's view, not the run's data
        log.warning("could not mark the earlier flow runs of %s crashed: %s", run_id, exc)
    return marked
