"""Experiment tracking: one MLflow run per loop run, one nested run per candidate.

Callers hold a ``Tracker`` and never ask whether tracking is on: ``make_tracker``
returns a ``NullTracker`` when it is off. Both trackers have the same methods.

``MlflowTracker`` is idempotent, because stages are retried and runs resumed: the loop
run's MLflow run is found by its ``ratchet.run_id`` tag (a resumed run re-opens it),
a candidate's nested run by its ``ratchet.candidate_id`` tag under that parent, and a
second ``log_candidate`` sends only what changed (params are immutable in MLflow: a
different value for a logged param is an error). One candidate costs one search per
parent (cached), a create, one ``log_batch``, an artifact upload and a status update.

``publish_registry`` syncs a run's champions (its ``registry`` rows holding the champion
alias) into MLflow's model registry, idempotently: storage/model_registry.py. The loop
run's params are its whole config, flattened by ``storage.tracking_params.flat_params``.

Tracking URI: the argument, else ``$MLFLOW_TRACKING_URI``, else a SQLite file under
the store (``<store>/mlflow.db``, artifacts in ``<store>/mlflow-artifacts``). An S3
store has no local folder for that file: set ``MLFLOW_TRACKING_URI`` to an MLflow
server (``infra/`` runs one), or Ratchet falls back to ``./.ratchet-mlflow/mlflow.db``
and logs a warning. MLflow 3.17 refuses the file store ("./mlruns") unless
``MLFLOW_ALLOW_FILE_STORE=true``; use SQLite or a server.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

from mlflow import MlflowClient  # noqa: E402  (telemetry must be off before import)
from mlflow.entities import Metric, Param, Run, RunTag  # noqa: E402
from mlflow.exceptions import MlflowException  # noqa: E402
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository  # noqa: E402
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID  # noqa: E402

from storage.model_registry import (  # noqa: E402
    champion_artifacts,
    champion_metrics,
    champion_rows,
    publish_versions,
)
from storage.store import TableStore, check_name  # noqa: E402

log = logging.getLogger(__name__)

RUN_TAG = "ratchet.run_id"
CANDIDATE_TAG = "ratchet.candidate_id"
OF_RUN_TAG = "ratchet.of_run_id"
LOOP_TAG = "ratchet.loop"
ARTIFACT_TAG = "ratchet.artifact_sha256"
EXPERIMENT_PREFIX = "ratchet/"
S3_FALLBACK_DIR = Path(".ratchet-mlflow")
_FINAL_STATUS = {"finished": "FINISHED", "budget_exhausted": "FINISHED", "failed": "FAILED", "killed": "KILLED"}
"""A run stopped by a budget cap ended cleanly: FINISHED (its `runs` event says why)."""


class Tracker(Protocol):
    """What the stages log. Ids returned are MLflow run ids (None when not tracking)."""

    def start_run(self, run_id: str, loop: str, params: Mapping[str, str]) -> str | None: ...

    def log_candidate(
        self,
        run_id: str,
        candidate_id: str,
        params: Mapping[str, str],
        metrics: Mapping[str, float],
        tags: Mapping[str, str],
        artifact: bytes | None = None,
        artifact_name: str = "candidate.txt",
        background: bool = False,
    ) -> str | None: ...

    def publish_registry(self, run_id: str, store: TableStore) -> int: ...

    def flush(self) -> None: ...

    def finish_run(self, run_id: str, status: str) -> None: ...


class NullTracker:
    """Tracking switched off: every call does nothing."""

    def start_run(self, run_id: str, loop: str, params: Mapping[str, str]) -> str | None:
        return None

    def log_candidate(
        self,
        run_id: str,
        candidate_id: str,
        params: Mapping[str, str],
        metrics: Mapping[str, float],
        tags: Mapping[str, str],
        artifact: bytes | None = None,
        artifact_name: str = "candidate.txt",
        background: bool = False,
    ) -> str | None:
        return None

    def publish_registry(self, run_id: str, store: TableStore) -> int:
        return 0

    def flush(self) -> None:
        return None

    def finish_run(self, run_id: str, status: str) -> None:
        return None


@dataclass
class _Logged:
    """What an MLflow run already holds, so a re-log sends only the difference
    without reading the run back."""

    run_id: str
    experiment_id: str
    artifact_uri: str
    status: str
    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]

    @classmethod
    def of(cls, run: Run) -> _Logged:
        data = run.data
        info = run.info
        return cls(info.run_id, info.experiment_id, info.artifact_uri, info.status,
                   dict(data.params), dict(data.metrics), dict(data.tags))


class MlflowTracker:
    """Tracker over an MLflow tracking URI (SQLite file or server)."""

    def __init__(self, tracking_uri: str) -> None:
        self.tracking_uri = tracking_uri
        self._client = MlflowClient(tracking_uri)
        self._parents: dict[str, _Logged] = {}
        self._children: dict[str, dict[str, _Logged]] = {}
        # Stages may log from several threads; the look-up-then-create steps must not
        # interleave, or one candidate could get two runs.
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._queued: list[Future] = []

    def start_run(self, run_id: str, loop: str, params: Mapping[str, str]) -> str | None:
        """The loop run's MLflow run, created once; a resumed run re-opens it."""
        with self._lock:
            parent = self._find_parent(check_name("run_id", run_id))
            if parent is None:
                tags = {RUN_TAG: run_id, LOOP_TAG: loop}
                parent = _Logged.of(self._client.create_run(self._experiment(loop), tags=tags, run_name=run_id))
            elif parent.status != "RUNNING":
                self._client.update_run(parent.run_id, status="RUNNING")
                parent.status = "RUNNING"
            self._send(parent, params=params, metrics={}, tags={})
            self._parents[run_id] = parent
            return parent.run_id

    def log_candidate(
        self,
        run_id: str,
        candidate_id: str,
        params: Mapping[str, str],
        metrics: Mapping[str, float],
        tags: Mapping[str, str],
        artifact: bytes | None = None,
        artifact_name: str = "candidate.txt",
        background: bool = False,
    ) -> str | None:
        """Log a candidate as a nested run of the loop run; logging it again only adds
        what changed (e.g. the gate decision tag). `background`: queue it for this
        tracker's one writer thread and return None at once, for a caller that logs the
        same candidates again when its run resumes (evolve's register re-logs every round),
        so a queue lost to a crash is made good; `publish_registry` and `finish_run` wait
        for the queue and raise its first error."""
        if background:
            self._queued.append(self._writer().submit(
                self.log_candidate, run_id, candidate_id, params, metrics, tags, artifact, artifact_name))
            return None
        with self._lock:
            parent = self._require_parent(run_id)
            return self._log_child(parent, run_id, candidate_id, params, metrics, tags, artifact, artifact_name).run_id

    def flush(self) -> None:
        """Wait for the queued candidates; the first error of one is raised (after all ran)."""
        queued, self._queued = self._queued, []
        errors = [f.exception() for f in queued]
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first

    def _writer(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ratchet-mlflow")
        return self._pool

    def publish_registry(self, run_id: str, store: TableStore) -> int:
        """Sync the run's champions into MLflow's model registry: each one's nested run
        (created if the loop never logged it) gets ``select_score``/``holdout_score``
        metrics and the candidate's artifact, and becomes a model version once (see
        storage/model_registry.py). Returns how many model versions were created."""
        self.flush()
        rows = champion_rows(store, check_name("run_id", run_id))
        if not rows:
            return 0
        artifacts = champion_artifacts(store, run_id, rows)
        with self._lock:
            parent = self._require_parent(run_id)
            self._children.pop(parent.run_id, None)  # other processes (workers) may have logged candidates
            sources = {}
            for row in rows:
                artifact, name = artifacts.get(row.candidate_id, (None, ""))
                logged = self._child_runs(parent).get(row.candidate_id)
                if logged is not None and logged.tags.get(ARTIFACT_TAG) == row.candidate_id:
                    artifact = None  # the loop logged the blob itself (a candidate id is its blob's sha256)
                child = self._log_child(parent, run_id, row.candidate_id, {}, champion_metrics(row), {}, artifact, name)
                sources[row.candidate_id] = (child.run_id, child.artifact_uri)
            return publish_versions(self._client, rows, sources)

    def finish_run(self, run_id: str, status: str) -> None:
        """Close the loop run's MLflow run with a final status (finished/failed/killed)."""
        if status not in _FINAL_STATUS:
            raise ValueError(f"run {run_id!r}: final status must be one of {sorted(_FINAL_STATUS)}, got {status!r}")
        self.flush()
        with self._lock:
            parent = self._require_parent(run_id)
            self._client.set_terminated(parent.run_id, status=_FINAL_STATUS[status])
            parent.status = _FINAL_STATUS[status]

    def _log_child(
        self,
        parent: _Logged,
        run_id: str,
        candidate_id: str,
        params: Mapping[str, str],
        metrics: Mapping[str, float],
        tags: Mapping[str, str],
        artifact: bytes | None,
        artifact_name: str,
    ) -> _Logged:
        """The candidate's nested run, created once, holding the given values (lock held)."""
        children = self._child_runs(parent)
        child = children.get(check_name("candidate_id", candidate_id))
        if child is None:  # created holding its tags (the artifact's comes once it is uploaded)
            identity = {MLFLOW_PARENT_RUN_ID: parent.run_id, CANDIDATE_TAG: candidate_id, OF_RUN_TAG: run_id}
            first = {**{k: str(v) for k, v in tags.items() if k != ARTIFACT_TAG}, **identity}
            run = self._client.create_run(parent.experiment_id, tags=first, run_name=candidate_id[:16])
            child = children[candidate_id] = _Logged.of(run)
        tags = dict(tags)
        if artifact is not None:
            digest = hashlib.sha256(artifact).hexdigest()
            if child.tags.get(ARTIFACT_TAG) != digest:
                self._upload(child, artifact, artifact_name)
            tags[ARTIFACT_TAG] = digest
        self._send(child, params=params, metrics=metrics, tags=tags)
        if child.status != "FINISHED":
            self._client.set_terminated(child.run_id, status="FINISHED")
            child.status = "FINISHED"
        return child

    def _experiment(self, loop: str) -> str:
        """The loop's experiment ("ratchet/<loop>"), created on first use."""
        name = f"{EXPERIMENT_PREFIX}{loop}"
        experiment = self._client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            return self._client.create_experiment(name, artifact_location=_artifact_location(self.tracking_uri))
        except MlflowException:
            # Another process created it between our lookup and create.
            experiment = self._client.get_experiment_by_name(name)
            if experiment is None:
                raise
            return experiment.experiment_id

    def _find_parent(self, run_id: str) -> _Logged | None:
        if run_id in self._parents:
            return self._parents[run_id]
        experiments = self._client.search_experiments(filter_string=f"name LIKE '{EXPERIMENT_PREFIX}%'")
        if not experiments:
            return None
        found = self._client.search_runs(
            [e.experiment_id for e in experiments], filter_string=f"tags.`{RUN_TAG}` = '{run_id}'"
        )
        if len(found) > 1:
            raise ValueError(f"run {run_id!r} has {len(found)} MLflow runs in {self.tracking_uri}; expected one")
        if not found:
            return None
        self._parents[run_id] = _Logged.of(found[0])
        return self._parents[run_id]

    def _require_parent(self, run_id: str) -> _Logged:
        parent = self._find_parent(check_name("run_id", run_id))
        if parent is None:
            raise ValueError(f"run {run_id!r} has no MLflow run in {self.tracking_uri}: call start_run first")
        return parent

    def _child_runs(self, parent: _Logged) -> dict[str, _Logged]:
        """All candidate runs under a parent, fetched once (paged) and then cached."""
        if parent.run_id not in self._children:
            runs = self._search_children(parent)
            self._children[parent.run_id] = {run.data.tags[CANDIDATE_TAG]: _Logged.of(run) for run in runs}
        return self._children[parent.run_id]

    def _search_children(self, parent: _Logged) -> Iterator[Run]:
        token = None
        while True:
            page = self._client.search_runs(
                [parent.experiment_id],
                filter_string=f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{parent.run_id}'",
                max_results=1000,
                page_token=token,
            )
            yield from (run for run in page if CANDIDATE_TAG in run.data.tags)
            token = page.token
            if not token:
                return

    def _send(
        self, run: _Logged, params: Mapping[str, str], metrics: Mapping[str, float], tags: Mapping[str, str]
    ) -> None:
        """One ``log_batch`` (more only past MLflow's 100 params/tags per call) with
        just the values the run does not already hold."""
        for key, value in params.items():
            if key in run.params and run.params[key] != str(value):
                raise ValueError(
                    f"MLflow run {run.run_id}: param {key!r} is already {run.params[key]!r}, "
                    f"cannot change it to {value!r} (MLflow params are immutable)"
                )
        now = int(time.time() * 1000)
        new_params = [Param(k, str(v)) for k, v in params.items() if k not in run.params]
        new_metrics = [Metric(k, float(v), now, 0) for k, v in metrics.items() if run.metrics.get(k) != float(v)]
        new_tags = [RunTag(k, str(v)) for k, v in tags.items() if run.tags.get(k) != str(v)]
        sent = (list(new_params), list(new_metrics), list(new_tags))
        while new_params or new_metrics or new_tags:
            self._client.log_batch(run.run_id, metrics=new_metrics[:800], params=new_params[:100], tags=new_tags[:100])
            new_params, new_metrics, new_tags = new_params[100:], new_metrics[800:], new_tags[100:]
        run.params.update((p.key, p.value) for p in sent[0])
        run.metrics.update((m.key, m.value) for m in sent[1])
        run.tags.update((t.key, t.value) for t in sent[2])

    def _upload(self, run: _Logged, artifact: bytes, artifact_name: str) -> None:
        """Write the artifact to the run's artifact location, known from when the run was
        created or found (``MlflowClient.log_artifact`` would read the whole run back
        first to learn it)."""
        name = Path(artifact_name)
        if name.is_absolute() or ".." in name.parts or not name.name:
            raise ValueError(f"artifact name {artifact_name!r} must be a relative file name")
        repository = get_artifact_repository(run.artifact_uri, tracking_uri=self.tracking_uri)
        with tempfile.TemporaryDirectory(prefix="ratchet-artifact-") as tmp:
            path = Path(tmp) / name.name
            path.write_bytes(artifact)
            folder = name.parent.as_posix()
            repository.log_artifact(str(path), artifact_path=None if folder == "." else folder)


def default_tracking_uri(store: TableStore) -> str:
    """``$MLFLOW_TRACKING_URI``, else SQLite under the store (or ``./.ratchet-mlflow``
    for an S3 store, with a warning)."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    if store.is_local:
        folder = store.local_path
    else:
        folder = S3_FALLBACK_DIR.resolve()
        log.warning(
            "store %s is on S3 and MLFLOW_TRACKING_URI is unset: tracking to %s/mlflow.db on this machine",
            store.root_uri,
            folder,
        )
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'mlflow.db'}"


def make_tracker(store: TableStore, uri: str | None, enabled: bool) -> Tracker:
    """The tracker for a run: MLflow at ``uri`` (or the default), or a NullTracker."""
    if not enabled:
        return NullTracker()
    return MlflowTracker(uri or default_tracking_uri(store))


def _artifact_location(tracking_uri: str) -> str | None:
    """Artifacts next to a SQLite file (MLflow's default, ./mlruns, depends on the
    working directory); a server decides for itself."""
    parts = urlsplit(tracking_uri)
    if parts.scheme != "sqlite":
        return None
    db_path = Path(tracking_uri[len("sqlite:///") :])
    return (db_path.parent / "mlflow-artifacts").resolve().as_uri()
