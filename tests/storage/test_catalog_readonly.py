"""`sql` over the store is read-only and confined to the store (local and S3): no
statement creates, changes or deletes a file, nor reads a file outside the store."""

from __future__ import annotations

import duckdb
import pytest

from schemas.tables import TABLES
from storage.catalog import connect, sql, write_catalog
from storage.sql_guard import READ_ONLY, ReadOnlyError, check_read_only
from storage.store import TableStore


def _fill(store: TableStore, make_row) -> None:
    for table in TABLES:
        store.write_part(table, "run1", "stage", "k", [make_row(table, "run1")])


def _files(store: TableStore) -> list[str]:
    from storage import fs as storefs

    return storefs.list_files(store.location, store.location.root, recursive=True)


def _outside_file(store: TableStore, tmp_path) -> str:
    """A Parquet file next to the store, not under it (same bucket on S3)."""
    if store.is_local:
        path = tmp_path / "outside.parquet"
        duckdb.execute(f"COPY (SELECT 42 AS secret) TO '{path}'")
        return str(path)
    root = store.root_uri
    path = f"{root}-outside/secret.parquet"
    with store.location.fs.open_output_stream(path.removeprefix("s3://")) as out:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"secret": [42]}), out)
    return path


WRITES = [
    "COPY (SELECT 1 AS x) TO '{root}/tables/runs/run_id=run1/zz.parquet'",
    "COPY runs TO '{root}/runs.csv'",
    "EXPORT DATABASE '{root}/export'",
    "ATTACH '{root}/other.duckdb' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CREATE TABLE t AS SELECT 1 AS x",
    "CREATE VIEW v AS SELECT 1 AS x",
    "CREATE TEMP TYPE e AS ENUM ('a')",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA enable_profiling",
    "CALL checkpoint()",
    "DROP VIEW runs",
    "SELECT 1; COPY (SELECT 1 AS x) TO '{root}/tables/runs/run_id=run1/zz.parquet'",
    "EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{root}/tables/runs/run_id=run1/zz.parquet'",
    "-- a comment\nEXPLAIN /* c */ ANALYZE COPY (SELECT 1 AS x) TO '{root}/zz.parquet'",
    "EXPLAIN (FORMAT json) COPY (SELECT 1 AS x) TO '{root}/zz.parquet'",
]


@pytest.mark.parametrize("statement", WRITES)
def test_statements_that_write_are_refused_and_leave_no_file(store: TableStore, make_row, statement) -> None:
    _fill(store, make_row)
    before = _files(store)
    with pytest.raises(ReadOnlyError, match=READ_ONLY):
        sql(store, statement.format(root=store.root_uri))
    assert _files(store) == before
    assert sql(store, "SELECT count(*) AS n FROM runs").to_pylist() == [{"n": 1}]


def test_files_outside_the_store_cannot_be_read(store: TableStore, make_row, tmp_path) -> None:
    _fill(store, make_row)
    outside = _outside_file(store, tmp_path)
    root = store.root_uri
    part = store.location.uri_of(store.part_files("scores")[0])  # .../tables/scores/run_id=run1/stage-k.parquet
    for query in (
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM read_csv('/etc/hostname')",
        "SELECT * FROM read_blob('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        f"SELECT * FROM read_parquet('{outside}')",
        f"SELECT * FROM read_parquet('{root}/../{outside.removeprefix(root.rsplit('/', 1)[0] + '/')}')",
        f"SELECT * FROM read_parquet('{root}-outside/secret.parquet')",
        f"SELECT * FROM read_parquet('{part}/../../../../../{outside.removeprefix(root.rsplit('/', 1)[0] + '/')}')",
        "SELECT * FROM read_text('https://example.com/')",
    ):
        with pytest.raises(duckdb.PermissionException):
            sql(store, query)


def test_a_locked_connection_cannot_be_unlocked(store: TableStore) -> None:
    con = connect(store)
    try:
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute("SET enable_external_access = true")
        with pytest.raises(duckdb.Error):
            con.execute(f"SET allowed_directories = ['/', '{store.root_uri}/']")
        with pytest.raises(duckdb.PermissionException):
            con.execute("SELECT * FROM read_text('/etc/hostname')").fetchall()
    finally:
        con.close()


def test_queries_still_read_the_views_and_the_store(store: TableStore, make_row) -> None:
    _fill(store, make_row)
    root = store.root_uri
    assert sql(store, "SELECT count(*) AS n FROM runs_current").to_pylist() == [{"n": 1}]
    assert sql(store, "WITH r AS (SELECT * FROM runs) FROM r SELECT count(*) AS n").to_pylist() == [{"n": 1}]
    assert sql(store, "DESCRIBE executions").num_rows == len(TABLES["executions"].model.model_fields)
    assert sql(store, "SUMMARIZE scores").num_rows > 0
    assert sql(store, "EXPLAIN SELECT * FROM candidates").num_rows == 1
    assert sql(store, "EXPLAIN ANALYZE SELECT count(*) FROM candidates").num_rows == 1
    assert sql(store, "PIVOT runs ON status USING count(*)").num_rows == 1
    part = store.location.uri_of(store.part_files("scores")[0])
    assert sql(store, f"SELECT count(*) AS n FROM read_parquet('{part}')").to_pylist() == [{"n": 1}]
    direct = f"SELECT count(*) AS n FROM read_parquet('{root}/tables/scores/*/*.parquet')"
    if store.is_local:  # the whole store folder; on S3 only the parts the views name
        assert sql(store, direct).to_pylist() == [{"n": 1}]
    else:
        with pytest.raises(duckdb.PermissionException):
            sql(store, direct)


def test_the_statement_check_allows_queries_only() -> None:
    for query in ("SELECT 1", "FROM (VALUES (1)) t(x)", "SHOW TABLES", "PRAGMA version", "EXPLAIN SELECT 1",
                  "explain analyse select 1", "SELECT 1; SELECT 2", "SELECT nope FROM nowhere"):
        check_read_only(query)
    for query in ("INSERT INTO runs SELECT * FROM runs", "UPDATE runs SET status = 'x'", "DELETE FROM runs",
                  "DETACH memory", "USE memory", "VACUUM", "EXPLAIN ANALYZE INSERT INTO runs SELECT * FROM runs"):
        with pytest.raises(ReadOnlyError):
            check_read_only(query)


def test_the_catalog_file_stays_a_plain_duckdb_database(local_store: TableStore, make_row, tmp_path) -> None:
    _fill(local_store, make_row)
    path = write_catalog(local_store, tmp_path / "catalog.duckdb")
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM runs_current").fetchone() == (1,)
        assert con.execute("SELECT current_setting('enable_external_access')").fetchone() == (True,)
    finally:
        con.close()
