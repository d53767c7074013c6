"""Champions in the model registry of a real `mlflow server` (SQLite backend, proxied
artifacts, on a free 127.0.0.1 port) after real evolve and self_healing runs: one model
version per champion registry row, alias champion on the last one, holdout as a metric
of the candidate's nested run, the candidate's program as the version's artifact."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow import MlflowClient
from mlflow.artifacts import download_artifacts

from flows.evolve import evolve
from flows.self_healing import self_healing
from schemas.admission import HealConfig
from schemas.configs import EvolveConfig, RunConfig
from storage.store import TableStore, open_store
from storage.tracking import CANDIDATE_TAG, RUN_TAG, MlflowTracker
from storage.tracking_params import flat_params

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SADeprecationWarning")]

MLFLOW = str(Path(sys.executable).with_name("mlflow"))
STARTUP_S = 120


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_healthy(uri: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"mlflow server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"mlflow server at {uri} did not answer /health within {STARTUP_S}s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An `mlflow server` in its own process group; yields its http://127.0.0.1:port."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port, log = _free_port(), root / "server.log"
    command = [MLFLOW, "server", "--backend-store-uri", f"sqlite:///{root / 'mlflow.db'}",
               "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(uri, process, log)
        yield uri
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and its uvicorn and job-runner children
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _parent(client: MlflowClient, loop: str, run_id: str):
    experiment = client.get_experiment_by_name(f"ratchet/{loop}").experiment_id
    [parent] = client.search_runs([experiment], filter_string=f"tags.`{RUN_TAG}` = '{run_id}'")
    return parent


def _run_count(client: MlflowClient, loop: str) -> int:
    return len(client.search_runs([client.get_experiment_by_name(f"ratchet/{loop}").experiment_id]))


def assert_registry_synced(client: MlflowClient, store: TableStore, config: RunConfig, run_id: str, model: str,
                           artifact: str, tmp_path: Path) -> None:
    """The model's versions are the run's champion rows one to one, with their scores,
    candidates and programs; alias champion is the last; a second sync adds nothing."""
    rows = sorted((r for r in store.read_rows("registry", run_id) if r.alias == "champion"), key=lambda r: r.version)
    assert rows and all(r.select_score is not None and r.holdout_score is not None for r in rows)
    assert client.get_registered_model(model).tags == {"ratchet.registry_name": f"{config.suite}/{config.loop}"}
    versions = sorted(client.search_model_versions(f"name = '{model}'"), key=lambda v: int(v.version))
    assert [v.tags for v in versions] == [
        {"run_id": run_id, "candidate_id": r.candidate_id, "decision_id": r.decision_id,
         "registry_version": str(r.version), "stage": r.stage,
         "event_at": r.event_at.isoformat(timespec="microseconds"),
         "select_score": str(r.select_score), "holdout_score": str(r.holdout_score)} for r in rows]
    assert [int(v.version) for v in versions] == list(range(1, len(rows) + 1))
    champion = client.get_model_version_by_alias(model, "champion")
    assert (int(champion.version), champion.tags["candidate_id"]) == (len(rows), rows[-1].candidate_id)

    last_row = {r.candidate_id: r for r in rows}  # a candidate registered twice holds its last scores
    parent_id = _parent(client, config.loop, run_id).info.run_id
    for version in versions:
        row, nested = last_row[version.tags["candidate_id"]], client.get_run(version.run_id)
        assert nested.data.tags[CANDIDATE_TAG] == row.candidate_id
        assert nested.data.tags["mlflow.parentRunId"] == parent_id
        assert nested.data.metrics["holdout_score"] == row.holdout_score
        assert nested.data.metrics["select_score"] == row.select_score
        folder = Path(download_artifacts(version.source, dst_path=str(tmp_path / f"v{version.version}")))
        assert (folder / artifact).read_bytes() == store.get_blob(row.candidate_id)

    n_runs = _run_count(client, config.loop)
    assert MlflowTracker(os.environ["MLFLOW_TRACKING_URI"]).publish_registry(run_id, store) == 0
    assert len(client.search_model_versions(f"name = '{model}'")) == len(rows)
    assert _run_count(client, config.loop) == n_runs


def test_an_evolve_runs_champions_reach_the_servers_registry(prefect_server, mlflow_server, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    config = RunConfig(loop="evolve", suite="circle_packing", budget=6, seed=3, workers=2, tracking=True,
                       evolve=EvolveConfig(children_per_round=3, islands=2))
    summary = evolve(config=config, store_uri=str(tmp_path / "store"), run_id="evolve-mlflow")
    client, store = MlflowClient(mlflow_server), open_store(str(tmp_path / "store"))

    parent = _parent(client, "evolve", "evolve-mlflow")
    assert parent.info.status == "FINISHED"
    assert parent.data.params == flat_params(config.model_dump(mode="json"))
    assert parent.data.params["evolve.children_per_round"] == "3" and parent.data.params["seed"] == "3"
    assert not {"inner_suites", "grpo.lr", "heal.accept_all"} & set(parent.data.params)  # only evolve's own sections
    assert "circle_packing.evolve" in {m.name for m in client.search_registered_models()}
    assert_registry_synced(client, store, config, "evolve-mlflow", "circle_packing.evolve", "candidate.py", tmp_path)
    champion = client.get_model_version_by_alias("circle_packing.evolve", "champion")
    assert champion.tags["candidate_id"] == summary["candidate_id"]
    assert client.get_run(champion.run_id).data.metrics["holdout_score"] == summary["holdout_score"]


def test_a_self_healing_runs_champions_reach_the_servers_registry(prefect_server, mlflow_server, tmp_path,
                                                                   monkeypatch):
    """accept_all with a guard every 2 admissions: the seed, every rule and the guard's
    smaller sets are champions in turn."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server)
    config = RunConfig(loop="self_healing", suite="toolsim", budget=4, seed=0, workers=2, tracking=True,
                       suite_params={"instances_per_template": 10}, heal=HealConfig(accept_all=True, guard_interval=2))
    summary = self_healing(config=config, store_uri=str(tmp_path / "store"), run_id="heal-mlflow")
    client, store = MlflowClient(mlflow_server), open_store(str(tmp_path / "store"))

    rows = store.read_rows("registry", "heal-mlflow")
    assert len(rows) == 5 + summary["guard_retired"]  # the seed, the 4 admitted rules, each retirement
    assert_registry_synced(client, store, config, "heal-mlflow", "toolsim.self_healing", "harness.py", tmp_path)
    champion = client.get_model_version_by_alias("toolsim.self_healing", "champion")
    assert champion.tags["candidate_id"] == summary["candidate_id"]
    assert float(champion.tags["holdout_score"]) == summary["holdout_score"]
