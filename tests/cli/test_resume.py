"""Kill a real `ratchet run` with SIGKILL at several points, `ratchet resume` it, and
compare every table with an uninterrupted run of the same seed."""

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["--suite", "circle_packing", "--budget", "20", "--seed", "11", "--workers", "2"]


def ratchet(args, store, prefect_home, kill_at=None):
    env = {**os.environ, "PREFECT_HOME": str(prefect_home), "RATCHET_STORE": str(store)}
    env.pop("RATCHET_KILL_AT", None)
    if kill_at:
        env["RATCHET_KILL_AT"] = kill_at
    log = Path(store).with_suffix(".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as sink:  # a file, not a pipe: an orphaned server would hold a pipe open
        proc = subprocess.Popen([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env,
                                start_new_session=True, stdout=sink, stderr=subprocess.STDOUT)
        code = proc.wait(timeout=600)
    try:  # a killed run leaves its ephemeral Prefect server behind, as a lost node would
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return code, log.read_text()


def snapshot(store_path):
    store = open_store(str(store_path))
    return {
        "candidates": sorted((r.round, r.candidate_id, r.operator, tuple(r.parent_ids), r.island)
                             for r in store.read_rows("candidates")),
        "executions": sorted((r.candidate_id, r.case_id, r.split, r.status) for r in store.read_rows("executions")),
        "scores": sorted((r.candidate_id, r.case_id, r.metric, r.value) for r in store.read_rows("scores")),
        "gate": sorted((r.round, r.candidate_id, r.decision, r.baseline_id) for r in store.read_rows("gate_decisions")),
        "registry": sorted((r.version, r.candidate_id, r.holdout_score) for r in store.read_rows("registry")),
        "distillates": sorted((r.round, r.content, r.support) for r in store.read_rows("distillates")),
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    base = tmp_path_factory.mktemp("reference")
    code, out = ratchet(["run", "evolve", *ARGS], base / "store", base / "prefect")
    assert code == 0, out
    return snapshot(base / "store"), base / "prefect"


@pytest.mark.parametrize("kill_at", ["sample:2", "execute:r0002", "register:2"])
def test_killed_run_resumes_to_identical_rows(reference, tmp_path, kill_at):
    expected, prefect_home = reference
    store = tmp_path / "store"
    code, out = ratchet(["run", "evolve", *ARGS], store, prefect_home, kill_at=kill_at)
    assert code == -signal.SIGKILL, out
    (run_id,) = {r.run_id for r in open_store(str(store)).read_rows("runs")}
    before = snapshot(store)
    assert before != expected
    code, out = ratchet(["resume", run_id], store, prefect_home)
    assert code == 0, out
    after = snapshot(store)
    for table in expected:
        assert after[table] == expected[table], table
    statuses = sorted(r.status for r in open_store(str(store)).read_rows("runs"))
    assert statuses == ["finished", "running", "running"]
    assert mlflow_runs(store) == (1, len(expected["candidates"]))
    events = sorted(open_store(str(store)).read_rows("runs"), key=lambda r: r.event_at)
    killed, resumed = events[0].prefect_flow_run_id, events[-1].prefect_flow_run_id
    assert killed != resumed
    assert flow_run_states(prefect_home, killed, resumed) == {killed: ("CRASHED", run_id), resumed: ("COMPLETED", run_id)}


def flow_run_states(prefect_home, *flow_run_ids) -> dict[str, tuple[str, str]]:
    """(state type, name) of flow runs in the CLI's ephemeral Prefect database: the killed
    run's flow run is marked crashed by the resume, and both are named by the run id."""
    with sqlite3.connect(Path(prefect_home) / "prefect.db") as db:
        rows = db.execute(f"SELECT id, state_type, name FROM flow_run WHERE id IN ({','.join('?' * len(flow_run_ids))})",
                          list(flow_run_ids)).fetchall()
    return {str(i): (state, name) for i, state, name in rows}


def mlflow_runs(store) -> tuple[int, int]:
    """(loop runs, candidate runs) in the store's MLflow database: no duplicates on resume."""
    with sqlite3.connect(store / "mlflow.db") as db:
        count = db.execute("SELECT key, count(*) FROM tags WHERE key IN ('ratchet.run_id', 'ratchet.candidate_id') "
                           "GROUP BY key").fetchall()
    counts = dict(count)
    return counts.get("ratchet.run_id", 0), counts.get("ratchet.candidate_id", 0)
