"""MLflow tracking on a SQLite file: one run per loop run, one nested run per candidate,
idempotent under retries and resumes; the null tracker has the same interface."""

from __future__ import annotations

import inspect
import uuid
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from storage.store import open_store
from storage.tracking import (
    CANDIDATE_TAG,
    RUN_TAG,
    MlflowTracker,
    NullTracker,
    Tracker,
    default_tracking_uri,
    make_tracker,
)

# MLflow's own SQLAlchemy mappings use a loader strategy that SQLAlchemy deprecates.
pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SADeprecationWarning")


@pytest.fixture(scope="module")
def tracking_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite database for the module (creating one costs about a second)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"



def _runs(uri: str, loop: str) -> list:
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(f"ratchet/{loop}")
    return list(client.search_runs([experiment.experiment_id], max_results=1000))


def _log(tracker: MlflowTracker, run_id: str, candidate: str, **overrides) -> str:
    args = {
        "params": {"operator": "mutate", "parents": "p1,p2", "proposer": "mutate"},
        "metrics": {"select_score": 0.5, "n_cases": 12.0},
        "tags": {"gate.decision": "trial"},
        "artifact": b"def place(n):\n    return []\n",
        "artifact_name": "program.py",
    }
    return tracker.log_candidate(run_id, candidate, **(args | overrides))


def test_one_parent_run_and_one_nested_run_per_candidate(tracking_uri: str, run_id: str) -> None:
    tracker = MlflowTracker(tracking_uri)
    parent_id = tracker.start_run(run_id, "loop-a", {"suite": "circle_packing", "seed": "0"})
    child_ids = [_log(tracker, run_id, f"cand{i}") for i in range(3)]
    tracker.finish_run(run_id, "finished")

    runs = {r.info.run_id: r for r in _runs(tracking_uri, "loop-a")}
    assert set(runs) == {parent_id, *child_ids}
    parent = runs[parent_id]
    assert parent.data.tags[RUN_TAG] == run_id and parent.info.status == "FINISHED"
    assert parent.data.params == {"suite": "circle_packing", "seed": "0"}
    for child_id, i in zip(child_ids, range(3)):
        child = runs[child_id]
        assert child.data.tags[MLFLOW_PARENT_RUN_ID] == parent_id
        assert child.data.tags[CANDIDATE_TAG] == f"cand{i}"
        assert child.data.params["parents"] == "p1,p2"
        assert child.data.metrics == {"select_score": 0.5, "n_cases": 12.0}
        assert child.info.status == "FINISHED"
    artifact = MlflowClient(tracking_uri).download_artifacts(child_ids[0], "program.py")
    assert Path(artifact).read_bytes() == b"def place(n):\n    return []\n"


def test_resumed_run_reuses_its_mlflow_run(tracking_uri: str, run_id: str) -> None:
    first = MlflowTracker(tracking_uri)
    parent_id = first.start_run(run_id, "loop-b", {"suite": "toolsim"})
    first.finish_run(run_id, "failed")

    resumed = MlflowTracker(tracking_uri)
    assert resumed.start_run(run_id, "loop-b", {"suite": "toolsim"}) == parent_id
    assert MlflowClient(tracking_uri).get_run(parent_id).info.status == "RUNNING"
    resumed.finish_run(run_id, "finished")
    parents = [r for r in _runs(tracking_uri, "loop-b") if r.data.tags.get(RUN_TAG) == run_id]
    assert [p.info.run_id for p in parents] == [parent_id]


def test_logging_a_candidate_again_is_idempotent(tracking_uri: str, run_id: str) -> None:
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-c", {})
    child_id = _log(tracker, run_id, "cand")
    assert _log(tracker, run_id, "cand") == child_id

    retried = MlflowTracker(tracking_uri)
    assert _log(retried, run_id, "cand", tags={"gate.decision": "accept"}) == child_id

    client = MlflowClient(tracking_uri)
    children = [r for r in _runs(tracking_uri, "loop-c") if r.data.tags.get("ratchet.of_run_id") == run_id]
    assert [c.info.run_id for c in children] == [child_id]
    assert children[0].data.tags["gate.decision"] == "accept"
    assert len(client.get_metric_history(child_id, "select_score")) == 1
    assert [a.path for a in client.list_artifacts(child_id)] == ["program.py"]


def test_changing_a_logged_param_is_refused(tracking_uri: str, run_id: str) -> None:
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-d", {})
    _log(tracker, run_id, "cand")
    with pytest.raises(ValueError, match="param 'operator' is already 'mutate', cannot change it to 'llm'"):
        _log(tracker, run_id, "cand", params={"operator": "llm"})


def test_misuse_names_the_run(tracking_uri: str, run_id: str) -> None:
    tracker = MlflowTracker(tracking_uri)
    with pytest.raises(ValueError, match=f"run '{run_id}' has no MLflow run"):
        _log(tracker, run_id, "cand")
    tracker.start_run(run_id, "loop-e", {})
    with pytest.raises(ValueError, match="final status must be one of"):
        tracker.finish_run(run_id, "running")
    with pytest.raises(ValueError, match="invalid candidate_id"):
        _log(tracker, run_id, "bad id'")


def _public_signatures(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_null_tracker_has_the_same_interface_and_does_nothing() -> None:
    protocol = _public_signatures(Tracker)
    assert protocol.keys() == {"start_run", "log_candidate", "finish_run"}
    assert _public_signatures(MlflowTracker) == protocol
    assert _public_signatures(NullTracker) == protocol

    null = NullTracker()
    assert null.start_run("r", "loop", {"a": "b"}) is None
    assert null.log_candidate("r", "c", {}, {"m": 1.0}, {}, b"x", "a.py") is None
    assert null.finish_run("r", "finished") is None


def test_make_tracker_defaults(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    store = open_store(str(tmp_path / "store"))
    assert isinstance(make_tracker(store, None, enabled=False), NullTracker)
    tracker = make_tracker(store, None, enabled=True)
    assert isinstance(tracker, MlflowTracker)
    assert tracker.tracking_uri == f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}"
    assert make_tracker(store, "http://mlflow:5000", enabled=True).tracking_uri == "http://mlflow:5000"

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://tracking:5000")
    assert default_tracking_uri(store) == "http://tracking:5000"


def test_s3_store_falls_back_to_a_local_sqlite_file(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(tmp_path)
    store = open_store("s3://some-bucket/prefix")
    assert default_tracking_uri(store) == f"sqlite:///{tmp_path / '.ratchet-mlflow' / 'mlflow.db'}"
