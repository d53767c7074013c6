"""Is `ratchet sql` as quick as bare DuckDB, on a store with 10 M score rows?

Builds a store through the project's own writers (``TableStore.write_part`` with
``ScoreRow``, ``CandidateRow``, ``GateDecisionRow``, ``RegistryRow`` and ``RunRow``
rows): R finished runs of ``--rounds`` rounds, each round one large scores part (every
candidate of the round on every case, two metrics) plus its candidates, gate decisions
and registry parts, as the evolve stages write them. Then times the README's example
queries, a count and a group-by over every score row, each through `ratchet sql` and
through bare DuckDB over the same files, before and after `ratchet compact RUN_ID` of
every run, and prints one table of times and ratios measured in this one run.

Both sides run as a fresh subprocess per query, as an analyst types them: `ratchet sql`
is ``python -m cli.entry sql QUERY --store S`` (what the ``ratchet`` script runs: imports,
store listing, views, the read-only checks, the query, the printed table). The first
`ratchet sql` after the store changed takes the full CLI and keeps the view statements
(``cli.sql_fast``); the table's times are the queries after it, and the first one is
printed on its own line per phase; bare DuckDB is
``python -c`` that imports duckdb, makes a ``read_parquet`` view over each table's
``tables/<table>/*/*.parquet`` and prints the rows. Each time is the median of
``--repeat`` tries, wall and CPU (a shared machine inflates the wall seconds of both
sides; the CPU seconds less so). Targets: small queries within 1.5x of bare, the group-by over every
score row under 1 s after compaction. A line per side also splits one small query into
import, view build and query time.

    .venv/bin/python benchmarks/sql_scale.py                     # 10 M score rows (minutes to build)
    .venv/bin/python benchmarks/sql_scale.py --small             # 20 k rows, well under a minute
    .venv/bin/python benchmarks/sql_scale.py --store /tmp/big    # keeps the store for a look afterwards
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[0] = str(REPO)  # the repository, not benchmarks/ (which has kernels.py)

SMALL_TARGET = 1.5
FIRST = "first query after a change"
GROUP_BY_TARGET_S = 1.0
METRICS = ("sum_radii", "ratio_to_best")
GROUP_BY = ("SELECT split, metric, count(*) AS n, avg(value) AS mean, max(value) AS best "
            "FROM scores GROUP BY ALL ORDER BY ALL")
QUERIES = {  # name -> (query, small?); the three README examples ("## Commands")
    "count runs": ("SELECT count(*) AS n FROM runs", True),
    "readme: operators x decisions": (
        "SELECT c.operator, g.decision, count(*) FROM gate_decisions g "
        "JOIN candidates c USING (run_id, candidate_id) GROUP BY ALL ORDER BY ALL", True),
    "readme: champions": (
        "SELECT run_id, version, select_score, holdout_score FROM registry ORDER BY run_id, version", True),
    "readme: best select per round": (
        "SELECT c.round, max(s.value) FROM scores s JOIN candidates c USING (run_id, candidate_id) "
        "WHERE s.split = 'select' AND s.metric = 'sum_radii' GROUP BY 1 ORDER BY 1", False),
    "count scores": ("SELECT count(*) AS n FROM scores", False),
    "group-by over scores": (GROUP_BY, False),
}
BARE = """
import sys, duckdb
root, query, tables = sys.argv[1], sys.argv[2], sys.argv[3:]
con = duckdb.connect()
for table in tables:
    con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{root}/tables/{table}/*/*.parquet')")
for row in con.execute(query).fetchall():
    print(*row)
"""
BREAKDOWN = """
import sys, time
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
{views}
t2 = time.perf_counter()
con.execute(sys.argv[2]).fetchall()
t3 = time.perf_counter()
print(f"import {{t1 - t0:.3f}} s, views {{t2 - t1:.3f}} s, query {{t3 - t2:.3f}} s")
"""
RATCHET_PARTS = ("import duckdb\nfrom cli import sql_fast\nfrom storage.sql_guard import lock_down_statements",
                 "con = duckdb.connect()\nfor s in sql_fast.recalled(sys.argv[1], sql_fast.layout(sys.argv[1])) + "
                 "lock_down_statements(sys.argv[1]):\n    con.execute(s)")
BARE_PARTS = ("import duckdb", "con = duckdb.connect()\nfor t in sys.argv[3:]:\n    con.execute("
              "f\"CREATE VIEW {t} AS SELECT * FROM read_parquet('{sys.argv[1]}/tables/{t}/*/*.parquet')\")")


@dataclass(frozen=True)
class Shape:
    """What the store holds: runs x rounds x candidates per round x cases x metrics scores."""

    runs: int
    rounds: int
    children: int
    cases: int

    @classmethod
    def for_rows(cls, rows: int, runs: int, rounds: int, children: int) -> Shape:
        return cls(runs, rounds, children, max(1, rows // (runs * rounds * children * len(METRICS))))

    @property
    def score_rows(self) -> int:
        return self.runs * self.rounds * self.children * self.cases * len(METRICS)


def _hex(*parts: object, size: int = 64) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:size]


def build(store, shape: Shape) -> list[str]:
    """Write the store (see the module docstring); returns the run ids. Prints progress."""
    started, written = time.perf_counter(), 0
    run_ids = [f"bench-{index:02d}" for index in range(shape.runs)]
    for index, run_id in enumerate(run_ids):
        t0 = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=index)
        store.write_part("runs", run_id, "status", "running", [_run_row(run_id, "running", t0)])
        best, version = float("-inf"), 0
        for round_ in range(shape.rounds):
            candidates = [_hex(run_id, round_, child) for child in range(shape.children)]
            store.write_part("candidates", run_id, "sample", f"r{round_:04d}", _candidate_rows(run_id, round_, candidates))
            scores = _score_rows(run_id, round_, candidates, shape.cases)
            store.write_part("scores", run_id, "score", f"r{round_:04d}", scores)
            written += len(scores)
            top = max(candidates, key=lambda c: _select_value(c))
            accepted = _select_value(top) > best
            store.write_part("gate_decisions", run_id, "gate", f"r{round_:04d}",
                             _gate_rows(run_id, round_, candidates, top if accepted else None))
            if accepted:
                best, version = _select_value(top), version + 1
                store.write_part("registry", run_id, "register", f"r{round_:04d}",
                                 [_registry_row(run_id, version, top, best, t0 + timedelta(minutes=round_))])
            if round_ % 10 == 9 or round_ == shape.rounds - 1:
                print(f"  built run {index + 1}/{shape.runs} round {round_ + 1}/{shape.rounds}: "
                      f"{written:,} of {shape.score_rows:,} score rows, {time.perf_counter() - started:.0f} s", flush=True)
        store.write_part("runs", run_id, "status", "finished",
                         [_run_row(run_id, "finished", t0 + timedelta(hours=1))])
    return run_ids


def _select_value(candidate: str) -> float:
    return int(candidate[:8], 16) / 0xFFFFFFFF


def _score_rows(run_id: str, round_: int, candidates: list[str], cases: int) -> list:
    from schemas.rows import ScoreRow

    holdout_from = max(1, cases * 4 // 5)
    rows = []
    for candidate in candidates:
        base = _select_value(candidate)
        for case in range(cases):
            split = "select" if case < holdout_from else "holdout"
            execution = _hex(run_id, candidate, case, size=24)
            for metric in METRICS:
                rows.append(ScoreRow(run_id=run_id, execution_id=execution, candidate_id=candidate,
                                     case_id=f"n{26 + case % 7}-{case}", split=split, scorer="circle_packing",
                                     scorer_version="32120e185bc2987b", metric=metric,
                                     value=base + (case % 97) / 1000.0 + round_ / 100.0, valid=True, reason=None))
    return rows


def _candidate_rows(run_id: str, round_: int, candidates: list[str]) -> list:
    from schemas.rows import CandidateRow

    operators = ("mutate", "crossover", "seed")
    return [CandidateRow(run_id=run_id, candidate_id=c, round=round_, parent_ids=[], operator=operators[i % 3],
                         proposer="mutate", artifact_kind="program", artifact_uri=f"blobs/{c}", island=i % 4,
                         summary=f"candidate {i} of round {round_}") for i, c in enumerate(candidates)]


def _gate_rows(run_id: str, round_: int, candidates: list[str], accepted: str | None) -> list:
    from schemas.rows import GateDecisionRow

    return [GateDecisionRow(run_id=run_id, decision_id=_hex(run_id, "gate", c, size=24), round=round_,
                            candidate_id=c, gate="best_so_far", baseline_id=None,
                            decision="accept" if c == accepted else "reject", reason="benchmark",
                            improved_cases=[], regressed_cases=[], select_score=_select_value(c),
                            baseline_score=None, delta=None, ci_low=None, ci_high=None, n_cases=1,
                            scorer_version="32120e185bc2987b", evidence_json="{}") for c in candidates]


def _registry_row(run_id: str, version: int, candidate: str, score: float, at: datetime):
    from schemas.rows import RegistryRow

    return RegistryRow(run_id=run_id, name="circle_packing/evolve", version=version, candidate_id=candidate,
                       stage="stable", alias="champion", decision_id=_hex(run_id, "gate", candidate, size=24),
                       select_score=score, holdout_score=score, event_at=at)


def _run_row(run_id: str, status: str, at: datetime):
    from schemas.rows import RunRow

    return RunRow(run_id=run_id, loop="evolve", suite="circle_packing", config_json="{}", status=status,
                  event_at=at, started_at=at, finished_at=at if status == "finished" else None,
                  parent_run_id=None, prefect_flow_run_id=None, mlflow_run_id=None, code_version="bench",
                  error=None, start_candidate_id=None, start_run_id=None)


def _tables(query: str) -> list[str]:
    """The tables a query reads: what bare DuckDB needs views for."""
    return [t for t in ("runs", "candidates", "gate_decisions", "registry", "scores") if t in query]


@dataclass(frozen=True)
class Timing:
    """Median wall and CPU (user + system, every thread) seconds of a command's tries.
    On a shared machine the CPU seconds vary less than the wall seconds."""

    wall_s: float
    cpu_s: float


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one subprocess; fails loudly when it fails."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} ... failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _median(tries: list[tuple[float, float]]) -> Timing:
    return Timing(statistics.median(t[0] for t in tries), statistics.median(t[1] for t in tries))


def time_queries(root: str, repeat: int, env: dict[str, str]) -> dict[str, tuple[Timing, Timing]]:
    """query name -> (`ratchet sql`, bare DuckDB), tried alternately, after a first
    `ratchet sql` (entry ``FIRST``: the full path, which keeps the view statements)."""
    first = "SELECT count(*) AS n FROM runs"
    result = {FIRST: (_median([_run(_ratchet(first, root), env)]),
                      _median([_run([sys.executable, "-c", BARE, root, first, "runs"], env)]))}
    for name, (query, _) in QUERIES.items():
        ratchet = _ratchet(query, root)
        bare = [sys.executable, "-c", BARE, root, query, *_tables(query)]
        tries = [(_run(ratchet, env), _run(bare, env)) for _ in range(repeat)]
        result[name] = (_median([t[0] for t in tries]), _median([t[1] for t in tries]))
    return result


def _ratchet(query: str, root: str) -> list[str]:
    return [sys.executable, "-m", "cli.entry", "sql", query, "--store", root]


def breakdown(root: str, env: dict[str, str]) -> dict[str, str]:
    """One small query split into import, view build and query time, per side."""
    query = QUERIES["count runs"][0]
    lines = {}
    for side, (imports, views) in (("ratchet sql", RATCHET_PARTS), ("bare duckdb", BARE_PARTS)):
        script = BREAKDOWN.format(imports=imports, views=views)
        done = subprocess.run([sys.executable, "-c", script, root, query, "runs"], cwd=REPO, env=env,
                              capture_output=True, text=True, check=True)
        lines[side] = done.stdout.strip()
    return lines


def report(phases: dict[str, dict[str, tuple[Timing, Timing]]]) -> list[str]:
    """The table: per query and phase, both sides' wall and CPU seconds and their
    ratios, then the verdicts (on wall seconds)."""
    lines = [f"{'query':30} {'phase':17} {'ratchet wall':>12} {'bare wall':>9} {'ratio':>6}  "
             f"{'ratchet cpu':>11} {'bare cpu':>8} {'ratio':>6}"]
    for phase, times in phases.items():
        for name, (ours, bare) in sorted(times.items(), key=lambda item: item[0] != FIRST):
            lines.append(f"{name:30} {phase:17} {ours.wall_s:12.3f} {bare.wall_s:9.3f} {ours.wall_s / bare.wall_s:6.2f}  "
                         f"{ours.cpu_s:11.3f} {bare.cpu_s:8.3f} {ours.cpu_s / bare.cpu_s:6.2f}")
    after = phases[list(phases)[-1]]
    worst = max(after[name][0].wall_s / after[name][1].wall_s for name, (_, small) in QUERIES.items() if small)
    group_by = after["group-by over scores"][0].wall_s
    lines.append(f"small queries, worst ratio after compaction: {worst:.2f} (target <= {SMALL_TARGET}) "
                 f"{'met' if worst <= SMALL_TARGET else 'NOT met'}")
    lines.append(f"group-by over scores after compaction: {group_by:.3f} s (target <= {GROUP_BY_TARGET_S} s) "
                 f"{'met' if group_by <= GROUP_BY_TARGET_S else 'NOT met'}")
    return lines


def compact_all(root: str, run_ids: list[str], env: dict[str, str]) -> float:
    """`ratchet compact RUN_ID` for every run; returns the seconds it took."""
    return sum(_run([sys.executable, "-m", "cli.main", "compact", run_id, "--store", root], env)[0] for run_id in run_ids)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="Score rows to write (default 10 M).")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=50, help="Rounds per run: one scores part each.")
    parser.add_argument("--children", type=int, default=40, help="Candidates per round.")
    parser.add_argument("--repeat", type=int, default=3, help="Tries per query and side (the median counts).")
    parser.add_argument("--store", help="A new store folder, kept afterwards (default: a temporary one).")
    parser.add_argument("--small", action="store_true", help="20 k score rows, 2 runs of 4 rounds, 1 try each.")
    args = parser.parse_args(argv)
    if args.small:
        args.rows, args.runs, args.rounds, args.children, args.repeat = 20_000, 2, 4, 5, 1
    return args


def main(argv: list[str] | None = None) -> list[str]:
    args = parse(argv)
    shape = Shape.for_rows(args.rows, args.runs, args.rounds, args.children)
    with tempfile.TemporaryDirectory(prefix="ratchet-sql-scale-") as scratch:
        root = str(Path(args.store or Path(scratch) / "store").resolve())
        env = {**os.environ, "RATCHET_CACHE_DIR": str(Path(scratch) / "cache"), "PYTHONPATH": str(REPO)}
        return _measure(root, shape, args.repeat, env)


def _measure(root: str, shape: Shape, repeat: int, env: dict[str, str]) -> list[str]:
    from storage.store import open_store

    store = open_store(root)
    print(f"store {root}: {shape.runs} runs x {shape.rounds} rounds x {shape.children} candidates x "
          f"{shape.cases} cases x {len(METRICS)} metrics = {shape.score_rows:,} score rows", flush=True)
    if any(store.part_listing().values()):
        raise SystemExit(f"store {root} already holds parts: pass a new --store folder")
    run_ids = build(store, shape)
    parts = sum(len(found) for found in store.part_listing().values())
    phases = {f"{parts} parts": time_queries(root, repeat, env)}
    seconds = compact_all(root, run_ids, env)
    parts = sum(len(found) for found in store.part_listing().values())
    print(f"  ratchet compact of {len(run_ids)} runs: {seconds:.1f} s, now {parts} parts", flush=True)
    phases[f"compacted, {parts}"] = time_queries(root, repeat, env)
    lines = report(phases)
    lines += [f"breakdown of '{QUERIES['count runs'][0]}' ({side}): {line}" for side, line in breakdown(root, env).items()]
    print("\n".join(lines), flush=True)
    return lines


if __name__ == "__main__":
    main()
