"""DuckDB views over the store (local and S3) and the catalog.duckdb file."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest

from schemas.arrow import rows_to_table
from schemas.rows import CandidateRow, ScoreRow
from schemas.tables import TABLES
from storage.catalog import SECRET_PLACEHOLDER, connect, sql, write_catalog
from storage.store import TableStore, open_store


def _scores(store: TableStore, make_row) -> None:
    """run1: two parts (3 rows + 1 row) and an empty one; run '42': one part."""
    store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", i) for i in range(3)])
    store.write_part("scores", "run1", "score", "b", [make_row("scores", "run1", 7)])
    store.write_part("scores", "run1", "score", "c", [])
    store.write_part("scores", "42", "score", "a", [make_row("scores", "42", 1)])


def test_views_aggregate_over_parts_and_runs(store: TableStore, make_row) -> None:
    _scores(store, make_row)
    result = sql(store, "SELECT run_id, count(*) AS n, sum(value) AS total FROM scores GROUP BY run_id ORDER BY run_id")
    assert result.to_pylist() == [
        {"run_id": "42", "n": 1, "total": 1.25},
        {"run_id": "run1", "n": 4, "total": 0.25 + 1.25 + 2.25 + 7.25},
    ]


def test_every_table_has_a_view_with_its_columns_even_without_parts(store: TableStore, make_row) -> None:
    con = connect(store)
    empty = {t: con.execute(f"DESCRIBE {t}").fetchall() for t in TABLES}
    assert all(con.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,) for t in TABLES)
    con.close()

    for table in TABLES:
        store.write_part(table, "run1", "stage", "k", [make_row(table, "run1")])
    con = connect(store)
    for table in TABLES:
        columns = con.execute(f"DESCRIBE {table}").fetchall()
        assert [c[:2] for c in columns] == [c[:2] for c in empty[table]], table
        assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,)
    con.close()


def test_run_id_stays_text_when_it_looks_numeric(store: TableStore, make_row) -> None:
    _scores(store, make_row)
    assert sql(store, "SELECT typeof(run_id) AS t FROM scores WHERE run_id = '42'").to_pylist() == [{"t": "VARCHAR"}]


def test_views_skip_temp_and_unpublished_files(store: TableStore, make_row) -> None:
    _scores(store, make_row)
    stray = rows_to_table(ScoreRow, [make_row("scores", "run1", 100)])
    directory = store.partition_dir("scores", "run1")
    for name in (".score-a.parquet.3f2a.tmp", ".score-z.parquet", "_compacted-0123.parquet"):
        with store.location.fs.open_output_stream(f"{directory}/{name}") as out:
            pq.write_table(stray, out)
    assert sql(store, "SELECT count(*) AS n FROM scores").to_pylist() == [{"n": 5}]
    assert store.read("scores").num_rows == 5


def test_current_state_views_pick_the_latest_event(local_store: TableStore, make_row) -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    running = make_row("runs", "run1").model_copy(update={"status": "running", "event_at": t0})
    done = running.model_copy(update={"status": "finished", "event_at": t0 + timedelta(minutes=5)})
    local_store.write_part("runs", "run1", "start", "k", [running])
    local_store.write_part("runs", "run1", "finish", "k", [done])

    base = make_row("registry", "run1").model_copy(update={"name": "packer", "alias": "champion"})
    events = [
        base.model_copy(update={"version": 1, "candidate_id": "c1", "event_at": t0}),
        base.model_copy(update={"version": 2, "candidate_id": "c2", "event_at": t0 + timedelta(hours=1)}),
        base.model_copy(update={"version": 2, "candidate_id": "c2", "alias": None, "event_at": t0}),
    ]
    local_store.write_part("registry", "run1", "register", "k", events)

    assert sql(local_store, "SELECT run_id, status FROM runs_current").to_pylist() == [
        {"run_id": "run1", "status": "finished"}
    ]
    current = sql(local_store, "SELECT alias, candidate_id FROM registry_current ORDER BY alias NULLS LAST")
    assert current.to_pylist() == [{"alias": "champion", "candidate_id": "c2"}, {"alias": None, "candidate_id": "c2"}]


QUERY_CATALOG = """
import duckdb, json, sys
con = duckdb.connect(sys.argv[1], read_only=True)
if len(sys.argv) > 2:
    for statement in open(sys.argv[2]).read().replace("{placeholder}", sys.argv[3]).split(";\\n"):
        if statement.strip() and not statement.lstrip().startswith("--"):
            con.execute(statement)
rows = con.execute("SELECT run_id, count(*), sum(value) FROM scores GROUP BY run_id ORDER BY run_id").fetchall()
empty = con.execute("SELECT count(*) FROM gate_decisions").fetchone()[0]
print(json.dumps({{"rows": rows, "empty": empty}}))
""".format(placeholder=SECRET_PLACEHOLDER)


def _query_in_subprocess(*args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", QUERY_CATALOG, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.integration
def test_catalog_file_opens_read_only_in_another_process(local_store: TableStore, make_row, tmp_path) -> None:
    _scores(local_store, make_row)
    path = write_catalog(local_store, tmp_path / "out" / "catalog.duckdb")
    assert path == tmp_path / "out" / "catalog.duckdb"
    assert sorted(p.name for p in path.parent.iterdir()) == ["catalog.duckdb"]

    result = _query_in_subprocess(str(path))
    assert result == {"rows": [["42", 1, 1.25], ["run1", 4, 11.0]], "empty": 0}

    write_catalog(open_store(str(tmp_path / "nothing")), path)
    assert _query_in_subprocess(str(path))["rows"] == []


@pytest.mark.integration
def test_s3_catalog_needs_its_setup_script_and_the_secret(s3_store: TableStore, make_row, tmp_path) -> None:
    _scores(s3_store, make_row)
    path = write_catalog(s3_store, tmp_path / "catalog.duckdb")
    setup = path.with_suffix(".setup.sql")
    script = setup.read_text()
    assert SECRET_PLACEHOLDER in script and "testing-secret" not in script
    assert "testing-secret" not in path.read_bytes().decode("latin-1")

    result = _query_in_subprocess(str(path), str(setup), "testing-secret")
    assert result == {"rows": [["42", 1, 1.25], ["run1", 4, 11.0]], "empty": 0}


def test_parts_written_before_a_column_existed_read_it_as_null(local_store: TableStore, make_row) -> None:
    old = rows_to_table(CandidateRow, [make_row("candidates", "old", 1)]).drop_columns(
        ["tokens_in", "tokens_out", "latency_s"])  # a part as the code before the LLM cost columns wrote it
    directory = local_store.partition_dir("candidates", "old")
    local_store.location.fs.create_dir(directory)
    with local_store.location.fs.open_output_stream(f"{directory}/sample-r0001.parquet") as out:
        pq.write_table(old, out)
    only_old = sql(local_store, "SELECT run_id, tokens_in, tokens_out, latency_s FROM candidates").to_pylist()
    assert only_old == [{"run_id": "old", "tokens_in": None, "tokens_out": None, "latency_s": None}]
    local_store.write_part("candidates", "new", "sample", "r0001", [make_row("candidates", "new", 2)])
    mixed = sql(local_store, "SELECT run_id, tokens_in, latency_s FROM candidates ORDER BY run_id").to_pylist()
    assert mixed == [{"run_id": "new", "tokens_in": 2, "latency_s": 2.25}, {"run_id": "old", "tokens_in": None,
                                                                         "latency_s": None}]
    assert [r.tokens_in for r in sorted(local_store.read_rows("candidates"), key=lambda r: r.run_id)] == [2, None]


def _ledger_store(store: TableStore, make_row) -> None:
    """run a: 3 candidates (2 LLM calls: 100+50 in, 20+10 out, 1.5+0.5 s; one mutate child)
    and 3 executions (cpu 0.25 + 0.5 + None); run b: nothing but its runs row."""
    for run in ("a", "b"):
        store.write_part("runs", run, "status", "running", [make_row("runs", run)])
    cost = [(100, 20, 1.5), (50, 10, 0.5), (None, None, None)]
    store.write_part("candidates", "a", "sample", "r0001", [
        make_row("candidates", "a", i).model_copy(update={"tokens_in": t_in, "tokens_out": t_out, "latency_s": s})
        for i, (t_in, t_out, s) in enumerate(cost)])
    store.write_part("executions", "a", "execute", "r0001", [
        make_row("executions", "a", i).model_copy(update={"cpu_s": cpu}) for i, cpu in enumerate([0.25, 0.5, None])])


def test_the_ledger_view_sums_each_runs_calls_tokens_seconds_and_evaluations(local_store: TableStore, make_row) -> None:
    _ledger_store(local_store, make_row)
    rows = sql(local_store, "SELECT * EXCLUDE (loop, suite, status) FROM ledger ORDER BY run_id").to_pylist()
    assert rows == [
        {"run_id": "a", "llm_calls": 2, "tokens_in": 150, "tokens_out": 30, "llm_seconds": 2.0,
         "sandbox_cpu_s": 0.75, "evaluations": 3},
        {"run_id": "b", "llm_calls": 0, "tokens_in": 0, "tokens_out": 0, "llm_seconds": 0.0,
         "sandbox_cpu_s": 0.0, "evaluations": 0},
    ]
