"""What the fault benchmarks (`benchmarks/faults.py`) share: a real `ratchet` CLI process
that can be SIGKILLed (with its process group: the ephemeral Prefect server and the
sandboxes die with it, as on a lost node), and a canonical form of a run's tables that
two runs of the same loop, suite, seed and budget must share row for row.

Two runs never share a run id, and every id derived from it (`schemas.ids.derived_id`:
execution, decision, distillate ids) differs too. The canonical form drops the
wall-clock columns, replaces the run id by ``RUN`` and each derived id by a label made
of what identifies its row (an execution by candidate, case, seed and attempt; a
decision by round, candidate and gate; a distillate by its rows), so any other
difference, one row lost, duplicated or changed, shows.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schemas.tables import TABLES  # noqa: E402
from storage.store import open_store  # noqa: E402

WALL_CLOCK = frozenset({"event_at", "started_at", "finished_at", "wall_s", "cpu_s", "peak_rss_mb",
                        "prefect_flow_run_id", "mlflow_run_id"})
"""Columns that measure when or how long, or name another system's record: they differ
between two runs of the same inputs by design."""

EVOLVE = ["run", "evolve", "--suite", "circle_packing", "--budget", "4", "--workers", "2", "--timeout", "2",
          "--set", "evolve.children_per_round=2", "--set", "sandbox.wall_factor=30", "--no-tracking"]
"""A small real run: rounds 0-2 (the seed, then 2 children a round), 2 sandbox workers; the
CPU limit decides a timeout (the wall backstop far off), so a loaded machine changes nothing."""
ROUNDS = 3


FAULT_VARIABLES = ("RATCHET_KILL_AT", "RATCHET_KILL_ONCE", "RATCHET_FAIL_AT")
_DERIVED = re.compile(r"\b[0-9a-f]{24}\b")
_MEASURED = re.compile(r"used [0-9.]+ s of CPU in [0-9.]+ s of wall clock")
"""A timeout's error names the CPU and wall seconds it measured: wall clock too."""


def ratchet(args: list[str], env: dict[str, str], log: Path, kill_after_s: float | None = None,
            timeout_s: float = 1200) -> int:
    """Run `ratchet ARGS` (output appended to ``log``) and return its exit code; with
    ``kill_after_s`` SIGKILL its whole process group at that moment (-9 then)."""
    proc = start_ratchet(args, env, log)
    try:
        code = proc.wait(timeout=kill_after_s if kill_after_s is not None else timeout_s)
    except subprocess.TimeoutExpired:
        if kill_after_s is None:
            raise
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
    return end_ratchet(proc, code)


def start_ratchet(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """`ratchet ARGS` started in its own process group, output appended to ``log``, the
    fault variables of this process's environment dropped unless ``env`` sets them."""
    full = {key: value for key, value in os.environ.items() if key not in FAULT_VARIABLES}
    full.update(env)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as sink:  # a file, not a pipe: an orphaned server would hold a pipe open
        sink.write(f"$ ratchet {' '.join(args)}  {sorted(env.items())}\n")
        sink.flush()
        return subprocess.Popen([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=full,
                                start_new_session=True, stdout=sink, stderr=subprocess.STDOUT)


def end_ratchet(proc: subprocess.Popen, code: int | None = None, timeout_s: float = 1200) -> int:
    """Wait for a started `ratchet` and SIGKILL what is left of its process group (a
    killed run's ephemeral Prefect server would outlive it); its exit code."""
    if code is None:
        code = proc.wait(timeout=timeout_s)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return code


def run_ids(store_uri: str) -> list[str]:
    """Every run of the store, sorted."""
    return sorted({row.run_id for row in open_store(store_uri).read_rows("runs")})


def latest_status(store_uri: str, run_id: str) -> tuple[str, str | None]:
    """(status, error) of a run's latest event."""
    events = sorted(open_store(store_uri).read_rows("runs", run_id), key=lambda r: r.event_at)
    return events[-1].status, events[-1].error


def snapshot(store_uri: str, run_id: str) -> dict[str, list[str]]:
    """Every table of one run in canonical form: per table, the sorted JSON of its rows.
    The `runs` table is its config and final status (a resumed run has more events)."""
    store = open_store(store_uri)
    raw = {table: [row.model_dump(mode="json") for row in store.read_rows(table, run_id)] for table in TABLES}
    root = store.root_uri
    raw = json.loads(json.dumps(raw).replace(root, "STORE"))  # blob URIs name the store
    labels = _labels(raw, run_id)
    tables = {}
    for table, rows in raw.items():
        if table == "runs":
            continue
        tables[table] = sorted(json.dumps(_canonical(row, run_id, labels), sort_keys=True) for row in rows)
    events = sorted(raw["runs"], key=lambda r: r["event_at"])
    tables["runs"] = [json.dumps([events[-1]["status"], _config(events[0]["config_json"])])] if events else []
    return tables


PLACEMENT = ("dask_address",)
"""Config fields that say where a run's work ran, not what it computed (like the
`train_steps.worker` column): the same run on threads or on Dask has the same rows."""
CAPS = ("max_llm_tokens", "max_evaluations")
"""Budget caps say how far a run may go, not what its rounds compute: a run stopped at a
cap and resumed with a raised one has the rows of a run started with the raised cap."""


def _config(config_json: str) -> dict:
    stored = json.loads(config_json)
    return {**stored, "config": {k: v for k, v in stored["config"].items() if k not in PLACEMENT + CAPS}}


def differences(expected: dict[str, list[str]], actual: dict[str, list[str]]) -> dict[str, tuple[int, int]]:
    """Tables whose canonical rows differ: {table: (rows missing, rows extra)}."""
    out = {}
    for table in sorted(set(expected) | set(actual)):
        want, got = _counts(expected.get(table, [])), _counts(actual.get(table, []))
        missing = sum((want[k] - got.get(k, 0)) for k in want if want[k] > got.get(k, 0))
        extra = sum((got[k] - want.get(k, 0)) for k in got if got[k] > want.get(k, 0))
        if missing or extra:
            out[table] = (missing, extra)
    return out


def _counts(rows: list[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[row] += 1
    return counts


def _labels(raw: dict[str, list[dict]], run_id: str) -> dict[str, str]:
    """Derived id -> a label of what identifies its row, independent of the run id."""
    labels = {}
    for e in raw["executions"]:
        labels[e["execution_id"]] = f"E:{e['candidate_id'][:16]}:{e['case_id']}:{e['seed']}:{e['attempt']}"
    for d in raw["gate_decisions"]:
        labels[d["decision_id"]] = f"D:{d['round']}:{d['candidate_id'][:16]}:{d['gate']}"
    by_distillate: dict[str, list[str]] = defaultdict(list)
    for d in raw["distillates"]:
        row = {k: v for k, v in d.items() if k not in ("distillate_id", "run_id")}
        by_distillate[d["distillate_id"]].append(json.dumps(_canonical(row, run_id, labels), sort_keys=True))
    for distillate_id, rows in by_distillate.items():
        labels[distillate_id] = "S:" + hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest()[:16]
    for r in raw["registry"]:  # a weight loop's decision id names its candidate and stage (no gate row)
        labels.setdefault(r["decision_id"], f"R:{r['name']}:{r['stage']}:{r['candidate_id'][:16]}")
    for n in raw["nodes"]:
        labels.setdefault(n["node_id"], f"N:{n['round']}:{n['diff'][:32]}")
    return labels


def _canonical(value, run_id: str, labels: dict[str, str]):
    if isinstance(value, dict):
        return {k: _canonical(v, run_id, labels) for k, v in value.items() if k not in WALL_CLOCK and k != "run_id"}
    if isinstance(value, list):
        items = [_canonical(v, run_id, labels) for v in value]
        if value and all(isinstance(v, str) and v in labels for v in value):
            return sorted(items)  # a list of ids kept in id order: the order of their labels
        return items
    if isinstance(value, str):
        value = _MEASURED.sub("used _ s of CPU in _ s of wall clock", value.replace(run_id, "RUN"))
        return _DERIVED.sub(lambda m: labels.get(m.group(0), m.group(0)), value)
    return value


def reference_run(base: Path, args: list[str], env: dict[str, str]) -> tuple[dict[str, list[str]], float]:
    """The run left alone: its canonical tables and the seconds from its first recorded
    event (its `running` part) to its exit, the span in which a kill can be resumed."""
    store = str(base / "reference")
    proc = start_ratchet(args, {**env, "RATCHET_STORE": store}, base / "reference.log")
    wait_for_part(store, "runs", "status-running", proc)
    recorded = time.monotonic()
    code = end_ratchet(proc)
    elapsed = time.monotonic() - recorded
    if code != 0:
        raise SystemExit(f"the reference run failed (exit {code}); see {base / 'reference.log'}")
    (run_id,) = run_ids(store)
    return snapshot(store, run_id), elapsed


def wait_for_part(store: str, table: str, marker: str, proc, timeout_s: float = 600) -> None:
    """Poll a local store until a part of ``table`` whose name contains ``marker`` exists."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if any(marker in p.name for p in Path(store, "tables", table).rglob("*.parquet")):
            return
        time.sleep(0.1)
    raise RuntimeError(f"no part {marker!r} of {table} in {store} (run exit {proc.poll()})")


@contextmanager
def prefect_server(home: Path, timeout_s: float = 300) -> Iterator[str]:
    """One real `prefect server start` on a free port for a series of runs (each run's
    own ephemeral server would cost a start per process); yields its API URL."""
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PREFECT_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)
    with (home / "server.log").open("w") as sink:
        server = subprocess.Popen([str(Path(sys.executable).with_name("prefect")), "server", "start", "--host",
                                   "127.0.0.1", "--port", str(port)], env=env, stdout=sink,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"prefect server did not start; see {home / 'server.log'}") from None
                time.sleep(1)
        yield url
    finally:
        end_ratchet(server, code=0)
        server.wait()
