"""`--dask` for the weight-update loops, on a real `dask scheduler` with two CLI `dask
worker`s on 127.0.0.1, one offering `GPU=1`: every grpo training chunk is a future only
that worker may run, its train_steps rows name it, and the run equals one without Dask.
A GPU worker SIGKILLed mid-chunk and started again under its name gets the chunk again
(the scheduler holds it: no worker left offers the resource), and the run finishes with
the rows of the uninterrupted run."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from flows.grpo import grpo
from schemas.configs import RunConfig
from schemas.post_training import GRPOConfig
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).with_name("dask")
GPU_WORKER = "gpu-worker"
GPU = ("--resources", "GPU=1")


def small_config(address: str | None = None) -> RunConfig:
    """tests/flows/test_grpo.py's small config, four steps in two chunks."""
    grpo_config = GRPOConfig(categories=("add",), pretrain_steps=300, prompts_per_step=4, group_size=4,
                             eval_every=2, lr=1e-4)
    return RunConfig(loop="grpo", suite="arith", budget=4, seed=5, tracking=False, dask_address=address,
                     grpo=grpo_config)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Cluster:
    """A `dask scheduler` and the `dask worker`s a test starts, CLI processes each in its own
    session (logs under `logs`); `close` SIGKILLs every one of them."""

    def __init__(self, logs: Path):
        self.logs, self.procs, self.client = logs, [], None
        self.address = f"tcp://127.0.0.1:{free_port()}"

    def start(self) -> None:
        """The scheduler, a client of it, and a worker without resources."""
        from distributed import Client

        self.spawn("scheduler", "scheduler", "--host", "127.0.0.1", "--port", self.address.rsplit(":", 1)[1],
                   "--no-dashboard")
        self.client = Client(self.address, timeout="60s")
        self.start_worker("cpu-worker")

    def spawn(self, log: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("RATCHET_")}
        environ.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
                       OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", **(env or {}))
        with open(self.logs / f"{log}.{len(self.procs)}.log", "wb") as out:
            proc = subprocess.Popen([str(DASK), *args], cwd=self.logs, env=environ, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def start_worker(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """A `dask worker` (no nanny: the process is the worker) once the scheduler lists it."""
        proc = self.spawn(name, "worker", self.address, "--name", name, "--nthreads", "1", "--no-dashboard",
                          "--no-nanny", "--host", "127.0.0.1", "--local-directory", str(self.logs), *args, env=env)
        self.wait_for(name, present=True)
        return proc

    def stop(self, proc: subprocess.Popen, name: str) -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.wait_for(name, present=False)

    def wait_for(self, name: str, present: bool, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while (name in self.worker_names()) != present:
            if time.monotonic() > deadline:
                raise TimeoutError(f"worker {name!r} still {'absent' if present else 'present'}; logs in {self.logs}")
            time.sleep(0.1)

    def worker_names(self) -> set[str]:
        return {str(w["name"]) for w in self.client.scheduler_info()["workers"].values()}

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The scheduler and a worker without resources; the tests add the GPU worker."""
    cluster = Cluster(tmp_path_factory.mktemp("dask"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="module", autouse=True)
def cpu_flow_process():
    """The flow's process evaluates (and, without Dask, trains) on CPU like the workers
    (CUDA hidden from them), so every comparison here is a CPU one on any machine."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("tasks.training.stages.device", lambda: torch.device("cpu"))
        yield


@pytest.fixture(scope="module")
def store_uri(tmp_path_factory) -> str:
    """One store for every run of the module: they share the warm start (trained once)."""
    return str(tmp_path_factory.mktemp("store"))


def trained(store_uri: str, run_id: str) -> tuple[list, list]:
    """What a run trained and registered, without what names the run or the machine."""
    store = open_store(store_uri)
    steps = sorted(store.read_rows("train_steps", run_id), key=lambda r: r.step)
    registry = sorted((r.name, r.version, r.candidate_id, r.stage, r.alias, r.select_score, r.holdout_score)
                      for r in store.read_rows("registry", run_id))
    return [(s.step, s.candidate_id, s.loss, s.metrics, s.tokens, s.samples) for s in steps], registry


def places(store_uri: str, run_id: str) -> set[tuple[str, str]]:
    return {(s.worker, s.device) for s in open_store(store_uri).read_rows("train_steps", run_id)}


@pytest.fixture(scope="module")
def local_run(prefect_server, store_uri):
    """The same config trained in the flow's process, without Dask."""
    torch.set_num_threads(1)
    grpo(config=small_config(), store_uri=store_uri, run_id="local")
    assert places(store_uri, "local") == {("local", "cpu")}
    return trained(store_uri, "local")


def test_every_chunk_trains_on_the_gpu_worker_and_equals_the_local_run(cluster, store_uri, local_run):
    worker = cluster.start_worker(GPU_WORKER, *GPU)
    try:
        grpo(config=small_config(cluster.address), store_uri=store_uri, run_id="on-dask")
        prefixes = cluster.client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    finally:
        cluster.stop(worker, GPU_WORKER)
    assert "grpo_chunk" in prefixes
    assert places(store_uri, "on-dask") == {(GPU_WORKER, "cpu")}
    steps, registry = trained(store_uri, "on-dask")
    assert [s[0] for s in steps] == [0, 1, 2, 3] and len(registry) == 2
    assert (steps, registry) == local_run


def test_a_gpu_worker_killed_mid_chunk_gets_the_chunk_again_when_it_restarts(cluster, store_uri, local_run):
    store, seen = open_store(store_uri), []
    # The first incarnation SIGKILLs itself in chunk 1 after its steps, before it publishes
    # (the crash point makes "while a chunk runs" exact; chunks take about a second). The
    # scheduler sees the connection drop and puts the chunk back: no worker left offers GPU,
    # so it waits, and the restarted worker runs it again from chunk 0's checkpoint.
    first = cluster.start_worker(GPU_WORKER, *GPU, env={"RATCHET_KILL_AT": "train:1"})

    def restart_when_killed():
        first.wait()
        seen.append((first.returncode, store.has_part("train_steps", "killed", "train", "c0001")))
        cluster.wait_for(GPU_WORKER, present=False)
        seen.append(cluster.start_worker(GPU_WORKER, *GPU))

    watcher = threading.Thread(target=restart_when_killed, daemon=True)
    watcher.start()
    try:
        grpo(config=small_config(cluster.address), store_uri=store_uri, run_id="killed")
    finally:  # the module's teardown kills the restarted worker
        if first.poll() is None:  # the run failed before the crash point: end the watcher's wait
            first.kill()
        watcher.join(timeout=60)
    assert seen[0] == (-signal.SIGKILL, False)
    assert places(store_uri, "killed") == {(GPU_WORKER, "cpu")}
    assert trained(store_uri, "killed") == local_run
