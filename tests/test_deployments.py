"""The deployments as a platform team runs them: a real `prefect server` on a free
127.0.0.1 port, work pools, `prefect deploy --all` from the repository root, a process
worker; a deployment run three times (each continuing from the last champion), one
flow-run process killed with SIGKILL and retried through Prefect. The store must hold
exactly the rows of the same three runs made without a kill."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from flows.evolve import evolve
from schemas.configs import RunConfig
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
PREFECT = str(Path(sys.executable).with_name("prefect"))
DEPLOYMENT = "evolve/evolve-circle-packing-nightly"
CONFIG = {"loop": "evolve", "suite": "circle_packing", "budget": 4, "seed": 0, "workers": 2, "tracking": False,
          "start_from": "champion", "evolve": {"children_per_round": 2, "islands": 2}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


class Platform:
    """Prefect's server and worker as processes, and the `prefect` CLI against them."""

    def __init__(self, tmp: Path) -> None:
        self.api = f"http://127.0.0.1:{free_port()}/api"
        self.store = tmp / "store"
        self.env = {**os.environ, "PREFECT_HOME": str(tmp / "prefect"), "PREFECT_API_URL": self.api,
                    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "RATCHET_STORE": str(self.store),
                    "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "5",
                    "PREFECT_CLI_PROMPT": "false",
                    "PREFECT_LOGGING_LEVEL": "INFO"}  # the worker's crash report is read from its INFO log
        for name in ("RATCHET_KILL_AT", "RATCHET_KILL_ONCE", "RATCHET_FAIL_AT", "RATCHET_DASK_ADDRESS"):
            self.env.pop(name, None)
        self.logs = tmp
        self.processes: list[subprocess.Popen] = []
        self.messages: dict[str, str | None] = {}

    def spawn(self, name: str, *args: str) -> subprocess.Popen:
        sink = (self.logs / f"{name}.log").open("w")  # a file, not a pipe: nothing blocks on a full pipe
        process = subprocess.Popen([PREFECT, *args], cwd=ROOT, env=self.env, stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        self.processes.append(process)
        return process

    def cli(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run([PREFECT, *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def close(self) -> None:
        for process in self.processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()

    def flow_run(self, flow_run_id: str) -> dict:
        with urllib.request.urlopen(f"{self.api}/flow_runs/{flow_run_id}", timeout=10) as response:
            return json.load(response)

    def run_deployment(self, job_env: dict[str, str] | None = None) -> str:
        """Start the deployment with the test's small config; returns the flow run id."""
        args = ["deployment", "run", DEPLOYMENT, "--param", f"config={json.dumps(CONFIG)}"]
        if job_env:
            args += ["--job-variable", f"env={json.dumps(job_env)}"]
        out = self.cli(*args)
        return out.split("UUID:", 1)[1].split()[0].strip()

    def finished(self, flow_run_id: str, timeout_s: float = 300) -> str:
        """Wait for a terminal state; returns its type."""
        terminal = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}

        def state():
            current = self.flow_run(flow_run_id).get("state") or {}
            return current if current.get("type") in terminal else None

        final = wait_for(state, timeout_s, f"flow run {flow_run_id} to end")
        self.messages[flow_run_id] = final.get("message")
        return final["type"]


@pytest.fixture
def platform(tmp_path):
    platform = Platform(tmp_path)
    try:
        host, port = platform.api.removeprefix("http://").removesuffix("/api").split(":")
        platform.spawn("server", "server", "start", "--host", host, "--port", port)
        wait_for(lambda: healthy(platform.api), 180, "prefect server")
        for pool in ("ratchet-cpu", "ratchet-gpu"):
            platform.cli("work-pool", "create", pool, "--type", "process")
        platform.cli("deploy", "--all")
        platform.spawn("worker", "worker", "start", "--pool", "ratchet-cpu", "--type", "process")
        yield platform
    finally:
        platform.close()


def snapshot(store, run_id: str) -> dict:
    return {
        "candidates": sorted((r.round, r.candidate_id, r.operator) for r in store.read_rows("candidates", run_id)),
        "executions": sorted((r.candidate_id, r.case_id, r.status) for r in store.read_rows("executions", run_id)),
        "scores": sorted((r.candidate_id, r.case_id, r.metric, r.value) for r in store.read_rows("scores", run_id)),
        "gate": sorted((r.round, r.candidate_id, r.decision) for r in store.read_rows("gate_decisions", run_id)),
        "registry": sorted((r.version, r.candidate_id, r.select_score, r.holdout_score)
                           for r in store.read_rows("registry", run_id)),
    }


def test_three_scheduled_runs_continue_and_a_killed_one_is_retried_through_prefect(platform, tmp_path,
                                                                                   prefect_server):
    nights = [platform.run_deployment()]
    assert platform.finished(nights[0]) == "COMPLETED"
    killed = platform.run_deployment({"RATCHET_KILL_AT": "register:1", "RATCHET_KILL_ONCE": str(tmp_path / "killed")})
    assert platform.finished(killed) == "CRASHED"  # the worker saw its process die of SIGKILL
    assert (tmp_path / "killed").exists()
    # The worker handles a killed process twice: its executor reports the crash at once,
    # then the worker proposes it again when the infrastructure call returns, and logs its
    # advice. A retry between the two is overwritten by the second (Prefect 3.9), so an
    # operator (and this test) retries after the worker's last word on the crash.
    wait_for(lambda: "prefect.flow_runs.worker - Check whether" in (tmp_path / "worker.log").read_text(), 120,
             "the worker's own crash report")
    platform.cli("flow-run", "retry", killed)
    assert platform.finished(killed) == "COMPLETED", platform.messages[killed]
    nights.append(killed)
    nights.append(platform.run_deployment())
    assert platform.finished(nights[2]) == "COMPLETED"

    store = open_store(str(platform.store))
    run_ids = [f"evolve-{night}" for night in nights]
    assert sorted(store.run_ids("runs")) == sorted(run_ids)  # a retry resumed its run: no fourth run
    assert [platform.flow_run(n)["name"] for n in nights] == run_ids
    events = sorted((r.status for r in store.read_rows("runs", run_ids[1])))
    assert events == ["finished", "running", "running"]  # started, killed, resumed by the retry
    for earlier, later in zip(run_ids, run_ids[1:]):
        (start,) = {(r.start_run_id, r.start_candidate_id) for r in store.read_rows("runs", later)}
        champion = max(store.read_rows("registry", earlier), key=lambda r: r.version)
        assert start == (earlier, champion.candidate_id)

    reference = open_store(str(tmp_path / "reference"))
    for night in range(3):  # the same three nights in-process, never killed
        evolve(config=RunConfig(**CONFIG), store_uri=reference.root_uri, run_id=run_ids[night])
    for run_id in run_ids:
        assert snapshot(store, run_id) == snapshot(reference, run_id), run_id
