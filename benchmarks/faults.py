"""Faults, with figures: real `ratchet` runs broken the ways an operator sees them break,
each compared table by table (`fault_kit.snapshot`) with the same run left alone.

- kills: SIGKILLs at seeded random points of a real `ratchet run` (a stage's crash
  point, `tasks/runtime/failpoints.py`, or the whole process group at a random moment),
  each followed by `ratchet resume`.
- s3: the S3 server (moto, on 127.0.0.1) stopped mid-run for a short outage (retried
  with backoff, the run identical) and for a long one (the run fails naming the
  stage; `ratchet resume` completes it identically).

    .venv/bin/python benchmarks/faults.py kills --kills 20
    .venv/bin/python benchmarks/faults.py s3
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fault_kit import (EVOLVE, ROUNDS, differences, end_ratchet, latest_status, prefect_server,  # noqa: E402
                       ratchet, reference_run, run_ids, snapshot, start_ratchet, wait_for_part)
from fault_services import dask_faults, disk_full, s3_outages  # noqa: E402,F401

@dataclass(frozen=True)
class Outcome:
    """One faulted run: how it was broken, its exit code, and the tables that differ
    from the run left alone after it was resumed (empty: identical)."""

    fault: str
    code: int
    differs: dict[str, tuple[int, int]]
    status: str


def kill_points(n: int, seed: int, reference_s: float) -> list[tuple[str, float | str]]:
    """n seeded kill points: ("failpoint", "stage:where") or ("timed", seconds after start).
    Timed points fall in the first 60% of the reference run's span: a run of the same
    config can be a third faster than the reference on a quiet machine, and a kill after
    its exit kills nothing."""
    rng = random.Random(seed)
    stages = [f"sample:{r}" for r in range(1, ROUNDS)] + [f"execute:r{r:04d}" for r in range(ROUNDS)] \
        + [f"register:{r}" for r in range(ROUNDS)]
    points: list[tuple[str, float | str]] = []
    for _ in range(n):
        if rng.random() < 0.5:
            points.append(("failpoint", rng.choice(stages)))
        else:
            points.append(("timed", round(rng.uniform(0.5, 0.6 * reference_s), 1)))
    return points


def killed_and_resumed(base: Path, index: int, point: tuple[str, float | str], args: list[str],
                       env: dict[str, str], expected: dict[str, list[str]]) -> Outcome:
    """Run with one kill, resume, and compare with the reference. A timed kill comes
    ``where`` seconds after the run recorded its start (before it, there is no run to
    resume: a rerun is the remedy)."""
    store = str(base / f"kill{index:02d}")
    log = base / f"kill{index:02d}.log"
    kind, where = point
    if kind == "failpoint":
        code = ratchet(args, {**env, "RATCHET_STORE": store, "RATCHET_KILL_AT": str(where)}, log)
    else:
        proc = start_ratchet(args, {**env, "RATCHET_STORE": store}, log)
        wait_for_part(store, "runs", "status-running", proc)
        try:
            code = proc.wait(timeout=float(where))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        code = end_ratchet(proc, code)
    ids = run_ids(store)
    if len(ids) != 1:
        return Outcome(f"{kind} {where}", code, {"runs": (1, 0)}, "no run recorded")
    resumed = ratchet(["resume", ids[0]], {**env, "RATCHET_STORE": store}, log)
    status = latest_status(store, ids[0])[0] if resumed == 0 else f"resume exit {resumed}"
    return Outcome(f"{kind} {where}", code, differences(expected, snapshot(store, ids[0])), status)


def kills(n: int = 20, seed: int = 7, run_seed: int = 3, base: Path | None = None) -> list[Outcome]:
    """n kills of evolve (seeded points), each resumed and compared; prints each one."""
    base = base or Path(tempfile.mkdtemp(prefix="ratchet-kills-"))
    args = [*EVOLVE, "--seed", str(run_seed)]
    with prefect_server(base / "prefect") as api:
        env = {"PREFECT_HOME": str(base / "prefect"), "PREFECT_API_URL": api}
        return _kill_series(n, seed, base, args, env)


def _kill_series(n: int, seed: int, base: Path, args: list[str], env: dict[str, str]) -> list[Outcome]:
    expected, reference_s = reference_run(base, args, env)
    print(f"reference run: {reference_s:.1f} s from its first event, rows per table "
          f"{ {t: len(rows) for t, rows in expected.items() if rows} }", flush=True)
    outcomes = []
    for index, point in enumerate(kill_points(n, seed, reference_s)):
        outcome = killed_and_resumed(base, index, point, args, env, expected)
        outcomes.append(outcome)
        verdict = "identical" if not outcome.differs and outcome.status == "finished" else f"DIFFERS {outcome.differs}"
        print(f"kill {index + 1:2d}/{n}: {outcome.fault:<22} exit {outcome.code:>3}  resumed: {outcome.status:<9} "
              f"{verdict}", flush=True)
    killed = sum(1 for o in outcomes if o.code == -9)
    same = sum(1 for o in outcomes if not o.differs and o.status == "finished")
    print(f"kills: {killed}/{n} runs SIGKILLed mid-run, {same}/{n} identical to the uninterrupted run after resume")
    return outcomes


TOOLSIM = ["--budget", "1", "--param", "instances_per_template=5", "--no-tracking"]
CONCURRENT = {
    "evolve": [*EVOLVE, "--seed", "3"],
    "self_healing": ["run", "self_healing", *TOOLSIM],
    "medrsi": ["run", "medrsi", *TOOLSIM, "--set", "medrsi.trial_batches=1", "--set", "medrsi.batch_size=4"],
    "grpo": ["run", "grpo", "--budget", "2", "--param", "n_per_category=40", "--set", "grpo.pretrain_steps=10",
             "--set", "grpo.prompts_per_step=2", "--set", "grpo.group_size=2", "--set", "grpo.max_new_tokens=12",
             "--no-tracking"],
}
"""Four loops of different families at tiny budgets, for the concurrent-writers test."""


def finished_runs(store: str) -> list[str]:
    return [run_id for run_id in run_ids(store) if latest_status(store, run_id)[0] == "finished"]


def concurrent_runs(base: Path | None = None, loops: dict[str, list[str]] = CONCURRENT) -> dict[str, object]:
    """The loops run one at a time on one store, then all at once on it (each with its
    own Prefect home: one ephemeral server per run) while `ratchet compact` of every
    finished run and `ratchet catalog` repeat; every run of both phases compared with
    its run alone, then resumed (a finished run is left alone) and compared again."""
    base = base or Path(tempfile.mkdtemp(prefix="ratchet-concurrent-"))
    store = str(base / "store")
    alone, expected = {}, {}
    for loop, args in loops.items():
        env = {"RATCHET_STORE": store, "PREFECT_HOME": str(base / f"prefect-alone-{loop}")}
        before = set(run_ids(store))
        if ratchet(args, env, base / f"alone-{loop}.log") != 0:
            raise SystemExit(f"{loop} alone failed; see {base / f'alone-{loop}.log'}")
        (alone[loop],) = set(run_ids(store)) - before
        expected[loop] = snapshot(store, alone[loop])
    before = set(run_ids(store))
    procs = {loop: start_ratchet(args, {"RATCHET_STORE": store, "PREFECT_HOME": str(base / f"prefect-{loop}")},
                                 base / f"together-{loop}.log") for loop, args in loops.items()}
    compacts, catalogs, failures = 0, 0, []
    while any(p.poll() is None for p in procs.values()):
        for run_id in finished_runs(store):
            compacts += 1
            if ratchet(["compact", run_id], {"RATCHET_STORE": store}, base / "compact.log") != 0:
                failures.append(f"compact {run_id}")
        catalogs += 1
        if ratchet(["catalog"], {"RATCHET_STORE": store}, base / "catalog.log") != 0:
            failures.append("catalog")
    codes = {loop: end_ratchet(p) for loop, p in procs.items()}
    together = {}
    for run_id in set(run_ids(store)) - before:
        loop = open_loop(store, run_id)
        together[loop] = run_id
    lost = duplicated = 0
    for loop in loops:
        for run_id in (alone[loop], together.get(loop)):
            if run_id is None:
                continue
            if ratchet(["resume", run_id], {"RATCHET_STORE": store, "PREFECT_HOME": str(base / f"prefect-{loop}")},
                       base / "resume.log") != 0:
                failures.append(f"resume {run_id}")
            for table, (missing, extra) in differences(expected[loop], snapshot(store, run_id)).items():
                lost, duplicated = lost + missing, duplicated + extra
                failures.append(f"{loop} {run_id} {table}: {missing} rows lost, {extra} duplicated")
    figures = {"runs": len(together), "codes": codes, "compacts": compacts, "catalogs": catalogs,
               "lost": lost, "duplicated": duplicated, "failures": failures}
    print(f"concurrent: {len(together)} runs at once ({', '.join(f'{k} exit {v}' for k, v in codes.items())}) "
          f"+ {compacts} compacts + {catalogs} catalogs on one store: {lost} rows lost, {duplicated} duplicated; "
          f"every run resumed: {not any(f.startswith('resume') for f in failures)}"
          + (f"; failures: {failures}" if failures else ""), flush=True)
    return figures


def open_loop(store: str, run_id: str) -> str:
    from storage.store import open_store

    return open_store(store).read_rows("runs", run_id)[0].loop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scenario", choices=["kills", "s3", "concurrent", "disk", "dask", "all"])
    parser.add_argument("--kills", type=int, default=20, help="how many kills (default 20)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the kill points (default 7)")
    args = parser.parse_args()
    if args.scenario in ("kills", "all"):
        kills(args.kills, args.seed)
    if args.scenario in ("s3", "all"):
        s3_outages()
    if args.scenario in ("concurrent", "all"):
        concurrent_runs()
    if args.scenario in ("disk", "all"):
        disk_full()
    if args.scenario in ("dask", "all"):
        dask_faults()


if __name__ == "__main__":
    main()
