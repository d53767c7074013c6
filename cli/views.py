"""Read-side commands: SQL over the store, run summaries, catalog and compaction."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
from rich.console import Console
from rich.table import Table

from cli import sql_fast
from cli.text_table import cell
from schemas.tables import TABLES
from storage.catalog import connect, write_catalog
from storage.sql_guard import READ_ONLY, ReadOnlyError, check_read_only
from storage.catalog import sql as run_sql
from storage.store import open_store


def render(console: Console, table: pa.Table, title: str | None = None, max_rows: int = 200) -> None:
    view = Table(title=title, show_lines=False)
    for name in table.column_names:
        view.add_column(name, overflow="fold")
    for row in table.slice(0, max_rows).to_pylist():
        view.add_row(*[cell(v) for v in row.values()])
    console.print(view)
    if table.num_rows > max_rows:
        console.print(f"... {table.num_rows - max_rows} more rows (use --format csv for all)")


def print_query(console: Console, store_uri: str, query: str, format: str = "table") -> None:
    """`ratchet sql`: a read-only query over the store's views (storage.catalog). On a
    local store the view statements are then kept for the light path (cli.sql_fast),
    unless the store changed while they were made."""
    store = open_store(store_uri)
    if format not in ("table", "csv", "json"):
        raise ValueError(f"--format {format!r} must be table, csv or json")
    try:
        if format == "csv":
            import pyarrow.csv as pacsv

            sink = pa.BufferOutputStream()
            pacsv.write_csv(run_sql(store, query), sink)
            print(sink.getvalue().to_pybytes().decode(), end="")
            return
        names, rows = _answer(store, query)
    except (ReadOnlyError, duckdb.Error) as exc:  # the user's SQL: say what is wrong, no traceback
        raise SystemExit(sql_error(store.root_uri, exc)) from None
    print(sql_fast.render(names, rows, format))


def _answer(store, query: str) -> tuple[list[str], list[tuple]]:
    check_read_only(query)
    digest = sql_fast.layout(store.root_uri) if store.is_local else None
    views: list[str] = []
    con = connect(store, views=views)
    try:
        cursor = con.execute(query)
        names, rows = [column[0] for column in cursor.description or ()], cursor.fetchall()
    finally:
        con.close()
    if digest is not None and sql_fast.layout(store.root_uri) == digest:
        sql_fast.remember(store.root_uri, digest, views)
    return names, rows


def sql_error(root: str, exc: BaseException) -> str:
    """The message for a refused or failed query: one line for a refused statement, a
    file outside the store, or a damaged table; DuckDB's own words otherwise."""
    first = str(exc).split("\n")[0].strip()
    if isinstance(exc, ReadOnlyError):
        return str(exc)
    if isinstance(exc, duckdb.PermissionException):
        reason = first.replace(" - file system operations are disabled by configuration", "")
        return f"{READ_ONLY} and reads only files under the store ({root}): {reason}"
    if "ratchet check" in first:  # a damaged table's view (storage.catalog.damaged_view_sql)
        return f"SQL error: {first}"
    message = f"SQL error: {exc}"
    if _may_be_damage(root, exc):
        message += ("\nA part of the store may be damaged: `ratchet check` names unreadable parts, "
                    "`ratchet check --quarantine` moves them aside.")
    return f"{message}\nTables: {', '.join(sorted(TABLES))} (see README, Tables)"


def _may_be_damage(root: str, exc: BaseException) -> bool:
    """Whether a failed query may have hit a damaged part: the error names a part file,
    the Parquet reader, or is one DuckDB does not classify (thrift decoding errors)."""
    text = str(exc)
    return (f"{root}/tables/" in text or type(exc) is duckdb.Error
            or isinstance(exc, (duckdb.IOException, duckdb.InternalException))
            or any(word in text.lower() for word in ("parquet", "thrift", "tprotocol")))


SHOW_QUERIES = {
    "status": "SELECT run_id, loop, suite, status, started_at, finished_at, error FROM runs_current WHERE run_id = $run",
    "ledger": "SELECT llm_calls, tokens_in, tokens_out, round(llm_seconds, 2) AS llm_seconds, "
              "round(sandbox_cpu_s, 2) AS sandbox_cpu_s, evaluations FROM ledger WHERE run_id = $run",
    "champions": "SELECT version, substr(candidate_id, 1, 12) AS candidate, select_score, holdout_score, event_at "
                 "FROM registry WHERE run_id = $run ORDER BY version",
    "executions": "SELECT split, status, count(*) AS n, round(avg(wall_s), 4) AS mean_wall_s "
                  "FROM executions WHERE run_id = $run GROUP BY ALL ORDER BY ALL",
    "gate": "SELECT c.operator, g.decision, count(*) AS n FROM gate_decisions g JOIN candidates c "
            "USING (run_id, candidate_id) WHERE run_id = $run GROUP BY ALL ORDER BY ALL",
    "llm": "SELECT count(*) AS llm_calls, count(*) FILTER (WHERE artifact_kind <> 'llm_answer') AS usable, "
           "round(usable / llm_calls, 3) AS parse_apply_rate, sum(tokens_in) AS tokens_in, "
           "sum(tokens_out) AS tokens_out, round(avg(latency_s), 2) AS mean_call_s "
           "FROM candidates WHERE run_id = $run AND proposer = 'llm' HAVING count(*) > 0",
    "nodes": "SELECT round AS node, substr(node_id, 1, 12) AS node_id, accepted, composite, public_composite, "
             "best_so_far FROM nodes WHERE run_id = $run ORDER BY round",
}


def show_run(console: Console, store_uri: str, run_id: str) -> None:
    """A run's status and summaries. A table that cannot be read (a damaged part) is
    named and skipped; the others still show, and the command then fails."""
    store = open_store(store_uri)
    quoted = "'" + run_id.replace("'", "''") + "'"
    con = connect(store)
    try:
        failed = []
        for title, query in SHOW_QUERIES.items():
            try:
                result = con.execute(query.replace("$run", quoted)).to_arrow_table()
            except duckdb.Error as exc:
                if title == "status":
                    raise SystemExit(sql_error(store.root_uri, exc)) from None
                console.print(f"{title}: cannot be read: {str(exc).splitlines()[0]}", markup=False, highlight=False)
                failed.append(title)
                continue
            if title == "status" and result.num_rows == 0:
                raise SystemExit(f"no run {run_id!r} in store {store_uri}; list runs with `ratchet runs`")
            if result.num_rows:
                render(console, result, title=title)
    finally:
        con.close()
    chain = lineage(store, run_id)
    if len(chain) > 1:
        render(console, pa.Table.from_pylist(chain), title="lineage (each run started from the one above's champion)")
    if failed:
        raise SystemExit(f"run {run_id}: {', '.join(failed)} could not be read; `ratchet check {run_id}` "
                         "names the damaged parts")
    warning = timeout_warning(store_uri, run_id)
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")


def lineage(store, run_id: str) -> list[dict]:
    """The runs `run_id` continues (`--start-from champion`), oldest first: each run,
    the champion it started from and the champion it ended with."""
    starts: dict[str, str | None] = {}
    for row in store.read_rows("runs"):
        if row.status == "running":
            starts.setdefault(row.run_id, row.start_run_id)
    champions: dict[str, object] = {}
    for row in sorted(store.read_rows("registry"), key=lambda r: (r.event_at, r.version)):
        if row.alias == "champion":
            champions[row.run_id] = row
    chain, current = [], run_id
    while current is not None and current not in {c["run"] for c in chain}:
        best = champions.get(current)
        chain.append({"run": current, "started_from": starts.get(current),
                      "champion": best.candidate_id[:12] if best else None,
                      "select_score": best.select_score if best else None,
                      "holdout_score": best.holdout_score if best else None})
        current = starts.get(current)
    return chain[::-1]


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


TIMEOUT_SHARE = ("SELECT count(*) FILTER (WHERE status = 'timeout') AS timeouts, count(*) AS n "
                 "FROM executions WHERE run_id = {run}")
TIMEOUT_WARN_ABOVE = 0.10


def timeout_warning(store_uri: str, run_id: str) -> str | None:
    """A line to print when more than 10% of a run's executions timed out (the limit,
    not the candidates, may be what the run measured), with what to raise. None when
    fewer did."""
    from tasks.runtime.lifecycle import stored_config

    [row] = run_sql(open_store(store_uri), TIMEOUT_SHARE.format(run="'" + run_id.replace("'", "''") + "'")).to_pylist()
    if not row["n"] or row["timeouts"] / row["n"] <= TIMEOUT_WARN_ABOVE:
        return None
    sandbox = stored_config(store_uri, run_id).sandbox
    return (f"{row['timeouts']} of {row['n']} executions ({100 * row['timeouts'] / row['n']:.0f}%) timed out at the "
            f"sandbox's limit of {sandbox.case_cpu_s:g} s of CPU per case (wall backstop {sandbox.case_wall_s:g} s), "
            "so scores may measure the limit rather than the candidates; raise it with --timeout SECONDS (or --set "
            "sandbox.timeout_s=SECONDS) and run again")
