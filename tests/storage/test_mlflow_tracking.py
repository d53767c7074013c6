"""MLflow tracking on a SQLite file: one run per loop run, one nested run per candidate,
idempotent under retries and resumes; champions synced into the model registry; the null
tracker has the same interface."""

from __future__ import annotations

import hashlib
import inspect
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.artifacts import download_artifacts
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from schemas.rows import CandidateRow, RegistryRow
from storage import model_registry
from storage.store import TableStore, open_store
from storage.tracking import (
    CANDIDATE_TAG,
    RUN_TAG,
    MlflowTracker,
    NullTracker,
    Tracker,
    default_tracking_uri,
    make_tracker,
)
from storage.tracking_params import flat_params

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


def test_queued_candidates_are_logged_by_the_run_end_and_their_errors_raised_there(tracking_uri, run_id) -> None:
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-q", {})
    assert [_log(tracker, run_id, f"q{i}", background=True) for i in range(4)] == [None] * 4
    tracker.finish_run(run_id, "finished")  # waits for the queue first
    children = [r for r in _runs(tracking_uri, "loop-q") if CANDIDATE_TAG in r.data.tags]
    assert sorted(r.data.tags[CANDIDATE_TAG] for r in children) == ["q0", "q1", "q2", "q3"]
    assert {r.info.status for r in children} == {"FINISHED"}

    # an error in the writer thread (a changed immutable param) surfaces at the next flush
    _log(tracker, run_id, "q0", params={"operator": "crossover"}, background=True)
    _log(tracker, run_id, "q4", background=True)
    with pytest.raises(ValueError, match="immutable"):
        tracker.flush()
    tracker.flush()  # raised once; the queue is empty again
    assert "q4" in {r.data.tags.get(CANDIDATE_TAG) for r in _runs(tracking_uri, "loop-q")}


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


def test_a_run_a_budget_cap_ended_is_finished_and_reopened_by_its_resume(tracking_uri: str, run_id: str) -> None:
    tracker = MlflowTracker(tracking_uri)
    parent_id = tracker.start_run(run_id, "loop-c", {"suite": "toolsim"})
    tracker.finish_run(run_id, "budget_exhausted")
    assert MlflowClient(tracking_uri).get_run(parent_id).info.status == "FINISHED"
    assert MlflowTracker(tracking_uri).start_run(run_id, "loop-c", {"suite": "toolsim"}) == parent_id
    assert MlflowClient(tracking_uri).get_run(parent_id).info.status == "RUNNING"


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


def test_null_tracker_has_the_same_interface_and_does_nothing(tmp_path) -> None:
    protocol = _public_signatures(Tracker)
    assert protocol.keys() == {"start_run", "log_candidate", "publish_registry", "finish_run", "flush"}
    assert _public_signatures(MlflowTracker) == protocol
    assert _public_signatures(NullTracker) == protocol

    null = NullTracker()
    assert null.start_run("r", "loop", {"a": "b"}) is None
    assert null.log_candidate("r", "c", {}, {"m": 1.0}, {}, b"x", "a.py") is None
    assert null.finish_run("r", "finished") is None
    assert null.publish_registry("r", open_store(str(tmp_path))) == 0


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


# -- the model registry ------------------------------------------------------------------

T0 = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
PROGRAMS = {"seed": b"def place(n):\n    return []\n", "child": b"def place(n):\n    return [(0.5, 0.5, 0.1)]\n",
            "late": b"def place(n):\n    return [(0.2, 0.2, 0.2)]\n"}


def _registry_store(tmp_path: Path, run_id: str, name: str = "circle_packing/loop-r") -> tuple[TableStore, dict]:
    """A store holding three programs as candidates (blobs) and a registry table: two
    champions in round 0, one non-champion row, a third champion in round 1."""
    store = open_store(str(tmp_path / "store"))
    ids = {label: store.put_blob(program) for label, program in PROGRAMS.items()}
    store.write_part("candidates", run_id, "sample", "r0000", [
        CandidateRow(run_id=run_id, candidate_id=cid, round=0, parent_ids=[], operator="seed", proposer="mutate",
                     artifact_kind="program", artifact_uri=store.blob_uri(cid), island=0, summary=label)
        for label, cid in ids.items()])
    row = {"run_id": run_id, "name": name, "stage": "stable", "alias": "champion"}
    store.write_part("registry", run_id, "register", "r0000", [
        RegistryRow(**row, version=1, candidate_id=ids["seed"], decision_id="d-seed", select_score=0.25,
                    holdout_score=0.125, event_at=T0),
        RegistryRow(**row, version=2, candidate_id=ids["child"], decision_id="d-child", select_score=0.5,
                    holdout_score=None, event_at=T0),
        RegistryRow(**(row | {"stage": "experimental", "alias": None}), version=3, candidate_id=ids["child"],
                    decision_id="d-trial", select_score=0.5, holdout_score=None, event_at=T0),
    ])
    return store, ids


def _register_round_1(store: TableStore, run_id: str, candidate_id: str, name: str = "circle_packing/loop-r") -> None:
    store.write_part("registry", run_id, "register", "r0001", [RegistryRow(
        run_id=run_id, name=name, version=4, candidate_id=candidate_id, stage="stable", alias="champion",
        decision_id="d-late", select_score=0.75, holdout_score=0.625, event_at=T0 + timedelta(seconds=1))])


def _versions(client: MlflowClient, name: str) -> dict[int, dict[str, str]]:
    return {int(v.version): v.tags for v in client.search_model_versions(f"name = '{name}'")}


def _aliases(client: MlflowClient, name: str) -> dict[str, int]:
    return {alias: int(version) for alias, version in client.get_registered_model(name).aliases.items()}


def _champion(client: MlflowClient, name: str) -> str:
    return client.get_model_version_by_alias(name, "champion").tags["candidate_id"]


def test_champions_become_model_versions_once(tracking_uri: str, run_id: str, tmp_path: Path) -> None:
    store, ids = _registry_store(tmp_path, run_id)
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-r", {})
    _log(tracker, run_id, ids["seed"], artifact=PROGRAMS["seed"])  # the loop logged the seed; the child it did not
    assert tracker.publish_registry(run_id, store) == 2

    client = MlflowClient(tracking_uri)
    model = client.get_registered_model("circle_packing.loop-r")
    assert model.tags == {"ratchet.registry_name": "circle_packing/loop-r"}
    common = {"run_id": run_id, "stage": "stable", "event_at": "2026-01-02T03:04:05.678901+00:00"}
    assert _versions(client, model.name) == {
        1: common | {"candidate_id": ids["seed"], "decision_id": "d-seed", "registry_version": "1",
                       "select_score": "0.25", "holdout_score": "0.125"},
        2: common | {"candidate_id": ids["child"], "decision_id": "d-child", "registry_version": "2",
                       "select_score": "0.5"},
    }
    assert _aliases(client, model.name) == {"champion": 2} and _champion(client, model.name) == ids["child"]
    children = {r.data.tags[CANDIDATE_TAG]: r for r in _runs(tracking_uri, "loop-r")
                if r.data.tags.get("ratchet.of_run_id") == run_id}
    assert set(children) == {ids["seed"], ids["child"]}
    assert children[ids["seed"]].data.metrics == {"select_score": 0.25, "holdout_score": 0.125, "n_cases": 12.0}
    assert children[ids["child"]].data.metrics == {"select_score": 0.5}
    assert [a.path for a in client.list_artifacts(children[ids["seed"]].info.run_id)] == ["program.py"]
    for version in ("1", "2"):
        mv = client.get_model_version(model.name, version)
        assert mv.run_id == children[mv.tags["candidate_id"]].info.run_id
        folder = Path(download_artifacts(mv.source, dst_path=str(tmp_path / f"v{version}")))
        name = "program.py" if version == "1" else "candidate.py"
        assert [p.name for p in folder.iterdir()] == [name]
        assert (folder / name).read_bytes() == store.get_blob(mv.tags["candidate_id"])

    resumed = MlflowTracker(tracking_uri)
    resumed.start_run(run_id, "loop-r", {})
    assert resumed.publish_registry(run_id, store) == 0
    assert tracker.publish_registry(run_id, store) == 0
    assert len(_versions(client, model.name)) == 2
    assert len([r for r in _runs(tracking_uri, "loop-r") if r.data.tags.get("ratchet.of_run_id") == run_id]) == 2
    assert len(client.get_metric_history(children[ids["child"]].info.run_id, "select_score")) == 1


def test_the_champion_alias_follows_the_latest_champion(tracking_uri: str, run_id: str, tmp_path: Path) -> None:
    name = f"circle_packing/{run_id}"  # a model of its own
    store, ids = _registry_store(tmp_path, run_id, name)
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-s", {})
    assert tracker.publish_registry(run_id, store) == 2
    client, model = MlflowClient(tracking_uri), model_registry.model_name(name)

    _register_round_1(store, run_id, ids["late"], name)
    assert tracker.publish_registry(run_id, store) == 1
    assert _aliases(client, model) == {"champion": 3}
    assert _champion(client, model) == ids["late"]
    late = client.get_model_version(model, "3")
    assert client.get_run(late.run_id).data.metrics == {"select_score": 0.75, "holdout_score": 0.625}

    later_run = f"{run_id}-b"  # a later run of the same loop registers under the same name
    store.write_part("registry", later_run, "register", "r0000", [RegistryRow(
        run_id=later_run, name=name, version=1, candidate_id=ids["seed"], stage="stable", alias="champion",
        decision_id="d-seed", select_score=0.25, holdout_score=0.125, event_at=T0 + timedelta(seconds=2))])
    tracker.start_run(later_run, "loop-s", {})
    assert tracker.publish_registry(later_run, store) == 1  # the same decision id in another run: a new version
    assert _champion(client, model) == ids["seed"] and _aliases(client, model) == {"champion": 4}
    assert tracker.publish_registry(run_id, store) == 0  # re-syncing the earlier run leaves the alias alone
    assert _aliases(client, model) == {"champion": 4}


def test_a_large_artifact_is_logged_as_its_uri(tracking_uri: str, run_id: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store, ids = _registry_store(tmp_path, run_id, f"arith/{run_id}")
    monkeypatch.setattr(model_registry, "MAX_ARTIFACT_BYTES", len(PROGRAMS["seed"]))  # the seed's fits, the child's not
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-t", {})
    tracker.publish_registry(run_id, store)
    client = MlflowClient(tracking_uri)
    seed, child = (client.get_model_version(model_registry.model_name(f"arith/{run_id}"), v) for v in ("1", "2"))
    assert [a.path for a in client.list_artifacts(seed.run_id)] == ["candidate.py"]
    assert [a.path for a in client.list_artifacts(child.run_id)] == ["artifact_uri.txt"]
    pointer = client.download_artifacts(child.run_id, "artifact_uri.txt", str(tmp_path))
    assert Path(pointer).read_text() == store.blob_uri(ids["child"]) + "\n"

    _log(tracker, run_id, ids["late"], artifact=PROGRAMS["late"], artifact_name="policy.pt")
    _register_round_1(store, run_id, ids["late"], f"arith/{run_id}")
    tracker.publish_registry(run_id, store)  # a blob the loop logged itself, however large, is left as it is
    late = client.get_model_version(model_registry.model_name(f"arith/{run_id}"), "3")
    assert [a.path for a in client.list_artifacts(late.run_id)] == ["policy.pt"]


def test_registry_names_that_collide_are_refused(tracking_uri: str, run_id: str, tmp_path: Path) -> None:
    store, _ = _registry_store(tmp_path, run_id, f"suite/{run_id}")
    tracker = MlflowTracker(tracking_uri)
    tracker.start_run(run_id, "loop-u", {})
    tracker.publish_registry(run_id, store)
    _register_round_1(store, run_id, hashlib.sha256(b"x").hexdigest(), f"suite:{run_id}")
    refused = f"'suite.{run_id}' holds registry name 'suite/{run_id}', not 'suite:{run_id}'"
    with pytest.raises(ValueError, match=refused):
        tracker.publish_registry(run_id, store)


def test_a_run_without_champions_publishes_nothing(tracking_uri: str, run_id: str, tmp_path: Path) -> None:
    tracker = MlflowTracker(tracking_uri)  # no MLflow run needed either: nothing to attach
    assert tracker.publish_registry(run_id, open_store(str(tmp_path))) == 0


def test_flat_params_are_dotted_strings_within_mlflows_limit() -> None:
    tree = {"loop": "evolve", "seed": 3, "rate": 0.25, "on": True, "none": None, "empty": {}, "list": ["a", "b"],
            "evolve": {"islands": 2, "inner": {"deep": "x"}}, "long": "y" * 600}
    assert flat_params(tree) == {
        "loop": "evolve", "seed": "3", "rate": "0.25", "on": "true", "none": "null", "empty": "{}",
        "list": '["a", "b"]', "evolve.islands": "2", "evolve.inner.deep": "x", "long": "y" * 497 + "...",
    }
