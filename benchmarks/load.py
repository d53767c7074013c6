"""Load: evolve with a queue of candidate evaluations, on 2 local sandbox workers and on
a real Dask cluster (a `dask scheduler` and 2 CLI `dask worker`s on 127.0.0.1), with
throughput, the tail of per-candidate evaluation time, and a check that nothing was
lost or duplicated: every candidate has exactly one execution per train and select case
and one gate decision, and both placements produce the same rows.

Per-candidate time is the sum of its executions' wall seconds (its sandbox batch, from
the harness's start of the first case to the end of the last), so queueing shows in
the throughput, not in it. The scale-out ratio itself is the overhead benchmark's.

    .venv/bin/python benchmarks/load.py                  # 200 evaluations (25 candidates x 8 cases)
    .venv/bin/python benchmarks/load.py --candidates 8   # smaller
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cli.env import prepare_environment  # noqa: E402

DASK = str(Path(sys.executable).with_name("dask"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A scheduler and `workers` CLI workers as processes, killed on exit."""

    def __init__(self, workers: int, log_dir: str, address: str | None = None) -> None:
        self.address = address or f"tcp://127.0.0.1:{free_port()}"
        self.processes = [self._spawn(log_dir, "scheduler", "scheduler", "--host", "127.0.0.1", "--port",
                                      self.address.rsplit(":", 1)[1], "--no-dashboard")]
        self.processes += [self._spawn(log_dir, f"worker{i}", "worker", self.address, "--nthreads", "1",
                                       "--no-dashboard", "--name", f"load-{i}") for i in range(workers)]
        self._wait_for(workers)

    @staticmethod
    def _spawn(log_dir: str, name: str, *args: str) -> subprocess.Popen:
        sink = open(os.path.join(log_dir, f"{name}.log"), "w")
        return subprocess.Popen([DASK, *args], stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)

    def _wait_for(self, workers: int, timeout_s: float = 120) -> None:
        from distributed import Client

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                with Client(self.address, timeout="5s") as client:
                    client.wait_for_workers(workers, timeout=deadline - time.monotonic())
                    return
            except (OSError, TimeoutError):
                time.sleep(0.5)
        raise RuntimeError(f"no {workers} Dask workers at {self.address} within {timeout_s} s")

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        for process in self.processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def run(store_uri: str, run_id: str, candidates: int, ms: float, cases: int, dask_address: str | None) -> float:
    from flows.evolve import evolve
    from schemas.configs import EvolveConfig, RunConfig

    config = RunConfig(loop="evolve", suite="spin", budget=candidates, seed=0, workers=2, tracking=False,
                       dask_address=dask_address, suite_params={"ms": ms, "cases": cases},
                       evolve=EvolveConfig(children_per_round=8))
    start = time.perf_counter()
    evolve(config=config, store_uri=store_uri, run_id=run_id)
    return time.perf_counter() - start


def measure(store_uri: str, run_id: str, wall: float) -> dict:
    """Throughput, per-candidate time quantiles, and the completeness checks."""
    from storage.store import open_store

    store = open_store(store_uri)
    executions = [e for e in store.read_rows("executions", run_id) if e.split in ("train", "select")]
    candidates = {c.candidate_id for c in store.read_rows("candidates", run_id)}
    decisions = Counter(d.candidate_id for d in store.read_rows("gate_decisions", run_id))
    per_case = Counter((e.candidate_id, e.case_id) for e in executions)
    per_candidate = Counter(e.candidate_id for e in executions)
    seconds = sorted(sum(e.wall_s for e in executions if e.candidate_id == c) for c in candidates)
    return {
        "evaluations": len(executions), "candidates": len(candidates), "wall_s": wall,
        "per_s": len(executions) / wall,
        "p50": statistics.median(seconds), "p95": seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))],
        "max": seconds[-1],
        "duplicated": sum(n - 1 for n in per_case.values() if n > 1),
        "lost": sum(1 for c in candidates if per_candidate[c] == 0 or decisions[c] != 1),
        "rows": sorted(per_case), "decisions": sorted(decisions.items()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=24, help="children evaluated (plus the seed)")
    parser.add_argument("--ms", type=float, default=10.0, help="CPU milliseconds per case")
    parser.add_argument("--cases", type=int, default=10, help="cases of the spin suite (8 train + select per candidate)")
    args = parser.parse_args()
    store_uri = tempfile.mkdtemp(prefix="ratchet-load-")
    prepare_environment(store_uri)
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
    results = {"2 local workers": measure(store_uri, "local", run(store_uri, "local", args.candidates, args.ms,
                                                                     args.cases, None))}
    with Cluster(2, store_uri) as cluster:
        wall = run(store_uri, "dask", args.candidates, args.ms, args.cases, cluster.address)
    results["Dask, 2 CLI workers"] = measure(store_uri, "dask", wall)
    print(f"{'placement':<22} {'evals':>6} {'cands':>6} {'wall s':>8} {'evals/s':>8} {'p50 s':>7} {'p95 s':>7} "
          f"{'max s':>7} {'lost':>5} {'dup':>4}")
    for name, r in results.items():
        print(f"{name:<22} {r['evaluations']:6d} {r['candidates']:6d} {r['wall_s']:8.2f} {r['per_s']:8.1f} "
              f"{r['p50']:7.3f} {r['p95']:7.3f} {r['max']:7.3f} {r['lost']:5d} {r['duplicated']:4d}")
    local, dask = results.values()
    same = local["rows"] == dask["rows"] and local["decisions"] == dask["decisions"]
    print(f"same executions and decisions on both placements: {same}")
    if not same or any(r["lost"] or r["duplicated"] for r in results.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
