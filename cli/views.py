"""Read-side commands: SQL over the store, run summaries, catalog and compaction."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
from rich.console import Console
from rich.table import Table

from storage.catalog import sql as run_sql
from storage.catalog import write_catalog
from schemas.tables import TABLES
from storage.store import open_store


def render(console: Console, table: pa.Table, title: str | None = None, max_rows: int = 200) -> None:
    view = Table(title=title, show_lines=False)
    for name in table.column_names:
        view.add_column(name, overflow="fold")
    for row in table.slice(0, max_rows).to_pylist():
        view.add_row(*[_cell(v) for v in row.values()])
    console.print(view)
    if table.num_rows > max_rows:
        console.print(f"... {table.num_rows - max_rows} more rows (use --format csv for all)")


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def print_query(console: Console, store_uri: str, query: str, format: str = "table") -> None:
    try:
        result = run_sql(open_store(store_uri), query)
    except duckdb.Error as exc:  # the user's SQL: say what DuckDB said, no traceback
        raise SystemExit(f"SQL error: {exc}\nTables: {', '.join(sorted(TABLES))} (see README, Tables)") from None
    if format == "csv":
        import pyarrow.csv as pacsv

        sink = pa.BufferOutputStream()
        pacsv.write_csv(result, sink)
        print(sink.getvalue().to_pybytes().decode(), end="")
    elif format == "json":
        print(json.dumps(result.to_pylist(), default=str, indent=1))
    elif format == "table":
        render(console, result)
    else:
        raise ValueError(f"--format {format!r} must be table, csv or json")


SHOW_QUERIES = {
    "status": "SELECT run_id, loop, suite, status, started_at, finished_at, error FROM runs_current WHERE run_id = $run",
    "champions": "SELECT version, substr(candidate_id, 1, 12) AS candidate, select_score, holdout_score, event_at "
                 "FROM registry WHERE run_id = $run ORDER BY version",
    "executions": "SELECT split, status, count(*) AS n, round(avg(wall_s), 4) AS mean_wall_s "
                  "FROM executions WHERE run_id = $run GROUP BY ALL ORDER BY ALL",
    "gate": "SELECT c.operator, g.decision, count(*) AS n FROM gate_decisions g JOIN candidates c "
            "USING (run_id, candidate_id) WHERE run_id = $run GROUP BY ALL ORDER BY ALL",
    "nodes": "SELECT round AS node, substr(node_id, 1, 12) AS node_id, accepted, composite, public_composite, "
             "best_so_far FROM nodes WHERE run_id = $run ORDER BY round",
}


def show_run(console: Console, store_uri: str, run_id: str) -> None:
    store = open_store(store_uri)
    quoted = "'" + run_id.replace("'", "''") + "'"
    status = run_sql(store, SHOW_QUERIES["status"].replace("$run", quoted))
    if status.num_rows == 0:
        raise SystemExit(f"no run {run_id!r} in store {store_uri}; list runs with `ratchet runs`")
    for title, query in SHOW_QUERIES.items():
        result = run_sql(store, query.replace("$run", quoted))
        if result.num_rows:
            render(console, result, title=title)


def write_catalog_file(store_uri: str, out: str | None) -> Path:
    store = open_store(store_uri)
    if out is None:
        if store_uri.startswith("s3://"):
            raise SystemExit("an S3 store has no local folder: pass --out PATH for catalog.duckdb")
        out = str(Path(store_uri) / "catalog.duckdb")
    return write_catalog(store, Path(out))


def compact_run(console: Console, store_uri: str, run_id: str) -> None:
    store = open_store(store_uri)
    statuses = {r.status for r in store.read_rows("runs", run_id)}
    if "finished" not in statuses:
        raise SystemExit(f"run {run_id} has not finished (statuses seen: {sorted(statuses) or 'none'}); "
                         "compact only finished runs, or resume it first")
    for table, (before, after) in store.compact(run_id).items():
        console.print(f"{table}: {before} parts -> {after}")
