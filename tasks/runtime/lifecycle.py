"""Run lifecycle stages: start (status event, anchored scorer, cases, tracker run),
resume checks, and finish. Status is append-only: the latest event wins."""

from __future__ import annotations

import hashlib
import json
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from statistics import fmean
from typing import Iterator, Sequence

from prefect import task
from prefect.runtime import flow_run

from schemas.configs import RunConfig
from schemas.rows import CaseRow, RunRow, ScoreRow
from storage.tracking_params import flat_params
from storage.uris import resolve_store
from suites.base import Suite
from tasks.runtime.budget import CAPS
from tasks.runtime.context import RunRef, make_suite, run_config, run_suite, store_for, tracker_for
from tasks.runtime.failpoints import fail_point
from tasks.runtime.prefect_states import failure_reason, supersede_flow_runs, with_stage
from tasks.runtime.retry import STAGE_OPTIONS, with_retries
from tasks.runtime.start import recorded_start, resolve_start

PACKAGES = ("schemas", "storage", "kernels", "suites", "tasks", "flows", "cli")


@lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of the project's Python sources, so every row can be traced to the code."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def new_run_id(loop: str) -> str:
    return f"{loop}-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def run_id_of_flow_run(loop: str) -> str:
    """The Ratchet run id of a flow run started without one (a deployment's): derived
    from the Prefect flow run id, so a Prefect retry of that flow run resumes the same run."""
    flow_run_id = flow_run.get_id()
    return f"{loop}-{flow_run_id}" if flow_run_id else new_run_id(loop)


def flow_run_name() -> str:
    """Prefect's name for a loop's flow run: the Ratchet run id it runs."""
    parameters = flow_run.parameters
    config = parameters["config"]
    loop = config["loop"] if isinstance(config, dict) else config.loop
    return parameters.get("run_id") or run_id_of_flow_run(loop)


def _event(ref: RunRef, config: RunConfig, status: str, started_at: datetime, config_json: str,
           parent_run_id: str | None, error: str | None = None) -> RunRow:
    now = datetime.now(timezone.utc)
    start = recorded_start(config_json)
    return RunRow(
        run_id=ref.run_id, loop=config.loop, suite=config.suite, config_json=config_json, status=status,
        event_at=now, started_at=started_at, finished_at=now if status != "running" else None,
        parent_run_id=parent_run_id, prefect_flow_run_id=flow_run.get_id(), mlflow_run_id=None,
        code_version=code_version(), error=error, start_candidate_id=start.candidate_id if start else None,
        start_run_id=start.run_id if start else None,
    )


def anchored_version(suites: Sequence[Suite]) -> str:
    return "+".join(s.scorer_version() for s in suites)


@task(name="start-run", **STAGE_OPTIONS)
def start_run(
    store_uri: str | None, run_id: str, config: RunConfig, suite_names: tuple[str, ...],
    parent_run_id: str | None = None,
) -> RunRef:
    """Record the run's start (or a resume), anchor its scorers, and publish its cases.
    No store URI (a deployment run): RATCHET_STORE, else ./.ratchet of the working directory."""
    ref = RunRef(store_uri=store_uri or resolve_store(None), run_id=run_id)
    store_uri = ref.store_uri
    store = store_for(store_uri)
    suites = [make_suite(config, name) for name in suite_names]
    if store.has_part("runs", run_id, "status", "running"):
        check_resumable(ref, anchored_version(suites))
        first = store.read_part("runs", run_id, "status", "running")[0]
        events = store.read_rows("runs", run_id)
        resumes = sum(1 for r in events if r.status == "running")
        supersede_flow_runs(events, run_id)
        store.write_part("runs", run_id, "status", f"resume-{resumes}",
                         [_event(ref, config, "running", first.started_at, with_caps(first.config_json, config),
                                 parent_run_id)])
    else:
        start = resolve_start(store, config, run_id)
        config_json = json.dumps({"config": config.model_dump(mode="json"), "scorer_version": anchored_version(suites),
                                  "start": start.model_dump() if start else None}, sort_keys=True)
        store.write_part("runs", run_id, "status", "running",
                         [_event(ref, config, "running", datetime.now(timezone.utc), config_json, parent_run_id)])
    with recorded_failure(ref):
        fail_point("start", "cases")
        if not store.has_part("cases", run_id, "setup", "cases"):
            rows = [CaseRow(run_id=run_id, suite=suite.name, case_id=c.case_id, split=c.split,
                            payload_json=json.dumps(c.payload, sort_keys=True))
                    for suite in suites for c in suite.cases()]
            store.write_part("cases", run_id, "setup", "cases", rows)
        stored = run_config(ref)  # a resume continues under the config the run started with
        tracker_for(ref).start_run(run_id, stored.loop, flat_params(stored.model_dump(mode="json")))
    return ref


def with_caps(config_json: str, config: RunConfig) -> str:
    """A stored ``config_json`` with the budget caps of ``config`` (a resume that raised
    one records it in its own event; everything else stays as the run started)."""
    stored = json.loads(config_json)
    caps = {cap: getattr(config, cap) for cap in CAPS}
    if all(stored["config"].get(cap) == value for cap, value in caps.items()):
        return config_json
    stored["config"].update(caps)
    return json.dumps(stored, sort_keys=True)


def interrupted(exc: BaseException | None) -> bool:
    """Whether ``exc`` is Ctrl-C or was raised while unwinding from it (Prefect's engine
    can turn a KeyboardInterrupt that lands inside a task run into its own error, e.g.
    "Task run is not set", with the KeyboardInterrupt as its context)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@contextmanager
def recorded_failure(ref: RunRef) -> Iterator[RunRef]:
    """Record a failure inside the block as the run's `failed` event (with its error)
    and re-raise it; Ctrl-C is recorded as `failed` with "interrupted", so the run is
    never left `running` and `ratchet resume` continues it."""
    try:
        yield ref
    except BaseException as exc:
        if interrupted(exc):
            record_failed(ref, "interrupted (Ctrl-C or SIGINT)", exc)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise KeyboardInterrupt from exc  # the engine's error while it unwound from Ctrl-C
        failure = with_stage(ref.run_id, exc)
        record_failed(ref, failure_reason(failure), failure)
        if failure is exc:
            raise
        raise failure from exc


def record_failed(ref: RunRef, reason: str, failure: BaseException) -> None:
    """Record the run's `failed` event, retried after the stages' backoff delays when the
    store fails transiently (the outage that failed the stage may still be on). If it
    cannot be recorded even then, the run's own failure is what the run raises, with a
    note of why its event is missing (`ratchet resume` continues it all the same)."""
    try:
        with_retries(lambda: finish_run.fn(ref, "failed", reason))  # the plain function: Prefect may be unwinding
    except Exception as exc:
        failure.add_note(f"the run's failed event could not be recorded: {type(exc).__name__}: {exc}")


@dataclass
class RunEnd:
    """How a loop's flow body ended: `finished`, or `budget_exhausted` with the reason
    (a budget cap stopped it at a round boundary; `ratchet resume` with a raised cap
    continues it)."""

    status: str = "finished"
    reason: str | None = None

    def stopped(self, reason: str | None) -> bool:
        """Record a budget stop (``reason`` from ``tasks.runtime.budget.admit_round``);
        whether the body should stop."""
        if reason is not None:
            self.status, self.reason = "budget_exhausted", reason
        return reason is not None


@contextmanager
def recorded_run(ref: RunRef) -> Iterator[RunEnd]:
    """The body of a loop's flow: a body that completes is recorded as `finished` (or
    `budget_exhausted`, when it says so through the yielded ``RunEnd``); a failure is
    recorded as a `failed` event (with its error) and re-raised."""
    end = RunEnd()
    with recorded_failure(ref):
        yield end
    finish_run(ref, end.status, end.reason)


def check_resumable(ref: RunRef, current_scorer: str) -> None:
    """A run can only resume under the scorer it was anchored to."""
    anchored = json.loads(store_for(ref.store_uri).read_part("runs", ref.run_id, "status", "running")[0].config_json)
    if anchored["scorer_version"] != current_scorer:
        raise RuntimeError(
            f"run {ref.run_id} was anchored to scorer {anchored['scorer_version']} but the installed suite's scorer "
            f"is {current_scorer}; resume it with the code version it started with"
        )


@task(name="finish-run", **STAGE_OPTIONS)
def finish_run(ref: RunRef, status: str = "finished", error: str | None = None) -> None:
    store = store_for(ref.store_uri)
    first = store.read_part("runs", ref.run_id, "status", "running")[0]
    key = "finished" if status == "finished" else f"{status}-{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}"
    store.write_part("runs", ref.run_id, "status", key,
                     [_event(ref, run_config(ref), status, first.started_at, first.config_json, first.parent_run_id, error)])
    tracker_for(ref).publish_registry(ref.run_id, store)
    tracker_for(ref).finish_run(ref.run_id, status)


def stored_config(store_uri: str, run_id: str) -> RunConfig:
    """The config a run started with and the budget caps of its latest start or resume
    event (a resume may have raised them), for `ratchet resume`."""
    ref = RunRef(store_uri=store_uri, run_id=run_id)
    starts = [r for r in store_for(store_uri).read_rows("runs", run_id) if r.status == "running"]
    latest = json.loads(max(starts, key=lambda r: r.event_at).config_json)["config"]
    config = run_config(ref)
    return type(config).model_validate({**config.model_dump(), **{cap: latest.get(cap) for cap in CAPS}})


def normalized_mean(suite: Suite, scores: Sequence[ScoreRow], candidate_id: str, split: str) -> float | None:
    """Mean over a split's cases of the suite's normalised score (1.0 = published best)."""
    by_case: dict[str, dict[str, float]] = {}
    for row in scores:
        if row.candidate_id == candidate_id and row.split == split:
            by_case.setdefault(row.case_id, {})[row.metric] = row.value
    return fmean(suite.normalized(m) for m in by_case.values()) if by_case else None


@task(name="summarize", **STAGE_OPTIONS)
def champion_summary(ref: RunRef) -> dict[str, object]:
    """The run's final champion: candidate, select and holdout scores, evaluations used."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    registry = sorted(store.read_rows("registry", ref.run_id), key=lambda r: r.version)
    executions = store.read_rows("executions", ref.run_id)
    best = registry[-1] if registry else None
    scores = store.read_rows("scores", ref.run_id) if best else []
    return {
        "run_id": ref.run_id, "suite": suite.name, "metric": suite.primary_metric,
        "candidate_id": best.candidate_id if best else None,
        "select_score": best.select_score if best else None,
        "holdout_score": best.holdout_score if best else None,
        "select_normalized": normalized_mean(suite, scores, best.candidate_id, "select") if best else None,
        "holdout_normalized": normalized_mean(suite, scores, best.candidate_id, "holdout") if best else None,
        "candidates": len(store.read_rows("candidates", ref.run_id)),
        "executions": len(executions),
    }
