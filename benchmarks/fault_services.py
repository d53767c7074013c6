"""The fault benchmarks that break a service under a real `ratchet run`: the S3 server
stopped (a short outage retried, a long one failing the run naming the stage, then
resumed), the store's disk full (a small tmpfs), and the Dask cluster (a worker killed
mid-round, the scheduler restarted mid-run). `benchmarks/faults.py` runs them."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from fault_kit import (EVOLVE, differences, end_ratchet, latest_status, ratchet, reference_run, run_ids,
                       snapshot, start_ratchet, wait_for_part)

BUCKET = "ratchet-faults"


class S3Server:
    """A moto S3 server on 127.0.0.1 that can be stopped and started again on the same
    port; its objects live in this process's moto backend, so they survive a restart."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._server = None

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        self._server.stop()

    def env(self) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret",
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": self.endpoint,
                "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                            aws_secret_access_key="testing-secret", region_name="us-east-1")


@contextmanager
def s3_server():
    """A started moto server with the bucket, its settings in this process's environment
    (the store is read from here too); restored afterwards."""
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = S3Server()
    server.start()
    saved = {key: os.environ.get(key) for key in server.env()}
    os.environ.update(server.env())
    try:
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()


def wait_for_object(server: S3Server, prefix: str, marker: str, proc, timeout_s: float = 600) -> None:
    """Poll until an object under ``prefix`` whose key contains ``marker`` exists."""
    client, deadline = server.client(), time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        if any(marker in item["Key"] for page in pages for item in page.get("Contents", [])):
            return
        time.sleep(0.1)
    raise RuntimeError(f"no object {marker!r} under {prefix} (run exit {proc.poll()})")


def task_run_counts(prefect_home: Path, run_id: str, task_name: str) -> int:
    """How often Prefect ran a stage of the run's flow runs (1 = no retry)."""
    with sqlite3.connect(prefect_home / "prefect.db") as db:
        (count,) = db.execute("SELECT coalesce(sum(t.run_count), 0) FROM task_run t JOIN flow_run f "
                              "ON t.flow_run_id = f.id WHERE f.name = ? AND t.name = ?", (run_id, task_name)).fetchone()
    return int(count)


def outage_run(server: S3Server, base: Path, name: str, outage_s: float, after: tuple[str, str],
               args: list[str], env: dict[str, str], expected: dict[str, list[str]]) -> dict[str, object]:
    """A run whose S3 server stops for ``outage_s`` seconds once the part ``after`` =
    (table, name prefix) exists; resumed if it failed. What happened, as figures."""
    store = f"s3://{BUCKET}/{name}"
    log = base / f"{name}.log"
    proc = start_ratchet(args, {**env, "RATCHET_STORE": store}, log)
    wait_for_object(server, f"{name}/tables/{after[0]}/", f"/{after[1]}", proc)
    server.stop()
    time.sleep(outage_s)
    server.start()
    code = end_ratchet(proc)
    (run_id,) = run_ids(store)
    status, error = latest_status(store, run_id)
    attempts = task_run_counts(base / "prefect", run_id, "execute r0001")
    figures = {"outage_s": outage_s, "exit": code, "status": status, "error": error, "execute_r0001_runs": attempts}
    if code != 0:
        figures["resume_exit"] = ratchet(["resume", run_id], {**env, "RATCHET_STORE": store}, log)
    figures["differs"] = differences(expected, snapshot(store, run_id))
    figures["final"] = latest_status(store, run_id)[0]
    return figures


def s3_outages(short_s: float = 3.0, long_s: float = 31.0, run_seed: int = 3,
               base: Path | None = None) -> list[dict[str, object]]:
    """The reference run on S3, then a short and a long outage of the S3 server."""
    base = base or Path(tempfile.mkdtemp(prefix="ratchet-s3-"))
    args = [*EVOLVE, "--seed", str(run_seed)]
    with s3_server() as server:
        env = {**server.env(), "PREFECT_HOME": str(base / "prefect")}
        code = ratchet(args, {**env, "RATCHET_STORE": f"s3://{BUCKET}/reference"}, base / "reference.log")
        if code != 0:
            raise SystemExit(f"the reference run on S3 failed (exit {code}); see {base / 'reference.log'}")
        (run_id,) = run_ids(f"s3://{BUCKET}/reference")
        expected = snapshot(f"s3://{BUCKET}/reference", run_id)
        results = []
        # both start as execute r0001 starts (its first publish can already be its last on a
        # quiet machine), so that stage meets them: the short one is retried, the long one fails it
        plan = (("short", short_s, ("candidates", "sample-r0001")), ("long", long_s, ("candidates", "sample-r0001")))
        for name, outage, after in plan:
            figures = outage_run(server, base, name, outage, after, args, env, expected)
            results.append(figures)
            print(f"S3 outage {outage:g} s: exit {figures['exit']}, execute r0001 ran {figures['execute_r0001_runs']}x, "
                  f"status {figures['status']}" + (f" ({figures['error']})" if figures["error"] else "")
                  + (f", resume exit {figures['resume_exit']}" if "resume_exit" in figures else "")
                  + f", final {figures['final']}, "
                  + ("identical to the run without an outage" if not figures["differs"] else f"DIFFERS {figures['differs']}"),
                  flush=True)
    return results


def mount_tmpfs(directory: Path, size: str, remount: bool = False) -> str | None:
    """Mount (or grow) a tmpfs of ``size`` at ``directory``; the reason when refused."""
    directory.mkdir(parents=True, exist_ok=True)
    options = f"remount,size={size}" if remount else f"size={size}"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount -t tmpfs -o {options}: {done.stderr.strip() or done.returncode}"


def visible_parts_readable(store: str, base: Path) -> tuple[int, int]:
    """(`ratchet check` exit code, temp files left in the store's tables)."""
    temps = sum(1 for path in Path(store, "tables").rglob("*") if path.is_file() and path.name.startswith((".", "_")))
    return ratchet(["check"], {"RATCHET_STORE": store}, base / "check.log"), temps


def disk_full(size: str = "180k", run_seed: int = 3, base: Path | None = None) -> dict[str, object] | str:
    """A run on a store whose tmpfs fills up, then the tmpfs grown and the run resumed;
    the figures, or why the tmpfs could not be mounted."""
    base = base or Path(tempfile.mkdtemp(prefix="ratchet-disk-"))
    args = [*EVOLVE, "--seed", str(run_seed)]
    env = {"PREFECT_HOME": str(base / "prefect")}
    expected, _ = reference_run(base, args, env)
    mount = base / "full"
    refused = mount_tmpfs(mount, size)
    if refused:
        return refused
    try:
        store = str(mount / "store")
        log = base / "full.log"
        code = ratchet(args, {**env, "RATCHET_STORE": store}, log)
        output = log.read_text()
        error_lines = [line for line in output.splitlines() if "failed:" in line or line.startswith("Error")]
        check_code, temps = visible_parts_readable(store, base)
        (run_id,) = run_ids(store)
        grown = mount_tmpfs(mount, "64m", remount=True)
        resumed = ratchet(["resume", run_id], {**env, "RATCHET_STORE": store}, log)
        figures = {"exit": code, "traceback": "Traceback" in output, "error": error_lines[-1] if error_lines else None,
                   "check_exit": check_code, "temp_files": temps, "grown": grown is None, "resume_exit": resumed,
                   "differs": differences(expected, snapshot(store, run_id)), "final": latest_status(store, run_id)[0]}
    finally:
        subprocess.run(["umount", str(mount)], check=False)
    print(f"disk full ({size} tmpfs store): exit {figures['exit']}, traceback {figures['traceback']}, "
          f"error: {figures['error']}; ratchet check exit {figures['check_exit']}, {figures['temp_files']} temp files; "
          f"resumed after growing it: exit {figures['resume_exit']}, {figures['final']}, "
          + ("identical" if not figures["differs"] else f"DIFFERS {figures['differs']}"), flush=True)
    return figures


def parts_of(store: str, table: str, marker: str) -> int:
    return sum(1 for p in Path(store, "tables", table).rglob("*.parquet") if marker in p.name)


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def dask_faults(run_seed: int = 3, base: Path | None = None) -> dict[str, dict[str, object]]:
    """evolve on a real Dask cluster (a `dask scheduler` and 2 CLI workers): one worker
    SIGKILLed while round 1's candidates run; then the scheduler SIGKILLed while they
    run, a new cluster started on its address, and the run resumed."""
    from load import Cluster

    base = base or Path(tempfile.mkdtemp(prefix="ratchet-dask-"))
    args = [*EVOLVE, "--seed", str(run_seed)]
    env = {"PREFECT_HOME": str(base / "prefect")}
    expected, _ = reference_run(base, args, env)
    results = {}
    for fault in ("worker", "scheduler"):
        store, log = str(base / fault), base / f"{fault}.log"
        cluster = Cluster(2, str(base))
        try:
            proc = start_ratchet([*args, "--dask", cluster.address], {**env, "RATCHET_STORE": store}, log)
            wait_for_part(store, "candidates", "sample-r0001", proc)  # kill at once: round 1 can end within a second
            in_flight = 2 - parts_of(store, "executions", "execute-r0001-")
            kill_group(cluster.processes[1] if fault == "worker" else cluster.processes[0])
            code = end_ratchet(proc)
        finally:
            cluster.__exit__(None, None, None)
        (run_id,) = run_ids(store)
        status, error = latest_status(store, run_id)
        figures = {"in_flight": in_flight, "exit": code, "status": status, "error": error}
        if code != 0:
            with Cluster(2, str(base), address=cluster.address):
                figures["resume_exit"] = ratchet(["resume", run_id], {**env, "RATCHET_STORE": store}, log)
        figures["differs"] = differences(expected, snapshot(store, run_id))
        figures["final"] = latest_status(store, run_id)[0]
        results[fault] = figures
        print(f"Dask {fault} killed with {in_flight} of round 1's 2 candidates in flight: exit {code}, {status}"
              + (f" ({error})" if error else "")
              + (f", resume exit {figures['resume_exit']}" if "resume_exit" in figures else "")
              + f", final {figures['final']}, "
              + ("identical to the threaded run" if not figures["differs"] else f"DIFFERS {figures['differs']}"),
              flush=True)
    return results
