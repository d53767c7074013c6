"""Scale-out: do 2 Dask workers evaluate CPU-bound candidates ~2x as fast as 1, and does
a round of 8 candidate batches finish close to the best possible makespan?

Real CLI workers (`dask scheduler` and `dask worker --nthreads 1` on 127.0.0.1, as
`benchmarks/load.py` starts them) run the execute stage's own work unit
(`tasks.stages.execute.evaluate_program`: one sandboxed process per candidate batch) on
the `spin` suite's CPU-bound cases. Per worker count: a warm-up round, then `--rounds`
rounds of 8 distinct candidates; printed: evaluations per second, the ratio to 1 worker
(issue 12's target: >= 1.8 with 2 workers), and each round's wall time over its lower
bound, max(the slowest batch, the busiest worker's summed batches), each batch timed on
its worker from its sandbox's start to its last case (target: <= 1.10).
Timing is the machine's: the ratios come from one run, on whatever load it has.

    .venv/bin/python benchmarks/scale_out.py              # 2 rounds of 8 x 8 cases of 50 ms
    .venv/bin/python benchmarks/scale_out.py --ms 100 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import Cluster  # noqa: E402


def programs(n: int, round_index: int) -> list[str]:
    """n distinct spin candidates (a distinct constant each; the runner spends the time)."""
    from suites.spin import SEED_PROGRAM

    return [SEED_PROGRAM.replace("value = 0.5\n", f"value = 0.5 + {round_index * n + i} * 1e-9\n", 1)
            for i in range(n)]


def timed_batch(program: str, runner: str, cases, sandbox) -> tuple[float, str, list]:
    """The execute stage's work unit on a worker: (its seconds, the worker, its results)."""
    from distributed import get_worker

    from tasks.stages.execute import evaluate_program

    start = time.perf_counter()
    results = evaluate_program(program, runner, "work", cases, sandbox)
    return time.perf_counter() - start, get_worker().name, results


def one_round(client, programs_, cases, sandbox) -> dict:
    from distributed import as_completed

    from suites.spin import RUNNER

    start = time.perf_counter()
    futures = client.map(timed_batch, programs_, runner=RUNNER, cases=list(cases), sandbox=sandbox, pure=False)
    batches, per_worker = [], {}
    for future in as_completed(futures):
        seconds, worker, results = future.result()
        batches.append(seconds)
        per_worker[worker] = per_worker.get(worker, 0.0) + seconds
        assert all(r.status == "ok" for r in results), [r.error for r in results if r.status != "ok"]
    wall = time.perf_counter() - start
    bound = max(max(batches), max(per_worker.values()))
    return {"wall": wall, "evaluations": len(programs_) * len(cases), "bound": bound, "workers_used": len(per_worker)}


def measure(workers: int, rounds: int, candidates: int, cases, sandbox, log_dir: str) -> list[dict]:
    from distributed import Client

    with Cluster(workers, log_dir) as cluster, Client(cluster.address, timeout="30s") as client:
        one_round(client, programs(candidates, 999), cases, sandbox)  # warm-up: imports, first sandbox start
        return [one_round(client, programs(candidates, r), cases, sandbox) for r in range(rounds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ms", type=float, default=50.0, help="CPU milliseconds per case")
    parser.add_argument("--cases", type=int, default=8, help="cases per candidate batch")
    parser.add_argument("--candidates", type=int, default=8, help="candidate batches per round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from cli.env import prepare_environment
    from schemas.configs import SandboxConfig
    from suites.spin import Spin

    log_dir = tempfile.mkdtemp(prefix="ratchet-scale-out-")
    prepare_environment(log_dir)
    cases = Spin(ms=args.ms, cases=max(4, args.cases)).cases()[: args.cases]
    sandbox = SandboxConfig()
    results = {n: measure(n, args.rounds, args.candidates, cases, sandbox, log_dir) for n in (1, 2)}
    load = os.getloadavg()[0]
    rate = {n: sum(r["evaluations"] for r in rs) / sum(r["wall"] for r in rs) for n, rs in results.items()}
    print(f"{'workers':>7} {'evals/s':>8} {'vs 1':>6} {'round s':>8} {'bound s':>8} {'round/bound':>11}")
    for n, rs in results.items():
        for r in rs:
            print(f"{n:7d} {r['evaluations'] / r['wall']:8.2f} {rate[n] / rate[1]:6.2f} {r['wall']:8.2f} "
                  f"{r['bound']:8.2f} {r['wall'] / r['bound']:11.2f}")
    worst = max(r["wall"] / r["bound"] for r in results[2])
    print(f"2 workers: {rate[2] / rate[1]:.2f}x the throughput of 1 (target >= 1.8); worst round at "
          f"{worst:.2f}x its lower bound (target <= 1.10); load average {load:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
