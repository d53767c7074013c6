"""`ratchet sql` is read-only and scoped to the store: every statement that would write
a file, change the database or read outside the store is refused in one line, and no
file appears."""

import importlib.util
import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from cli.main import app
from schemas.tables import TABLES
from storage.store import open_store

_spec = importlib.util.spec_from_file_location(
    "storage_test_rows", Path(__file__).resolve().parents[1] / "storage" / "conftest.py")
_rows = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rows)
build_row = _rows.build_row  # the storage tests' row factory: a valid row of any table

pytestmark = [pytest.mark.integration]
runner = CliRunner()


@pytest.fixture
def store(tmp_path) -> Path:
    root = tmp_path / "store"
    s = open_store(str(root))
    for table in TABLES:
        s.write_part(table, "run1", "stage", "k", [build_row(table, "run1")])
    return root


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.parent.rglob("*") if p.is_file())


def ratchet_sql(store: Path, query: str):
    return runner.invoke(app, ["sql", query, "--store", str(store), "--format", "json"])


REFUSED = [
    "COPY (SELECT 1 AS x) TO '{root}/tables/runs/run_id=run1/zz.parquet'",
    "COPY runs TO '{tmp}/runs.csv' (HEADER)",
    "ATTACH '{root}/other.duckdb' AS other",
    "EXPORT DATABASE '{root}/export'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "CREATE TABLE t AS SELECT 1 AS x",
    "SET enable_external_access = true",
    "EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{root}/zz.parquet'",
]
OUTSIDE = [
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/hostname')",
    "SELECT * FROM read_parquet('{tmp}/outside.parquet')",
    "SELECT * FROM read_parquet('{root}/../outside.parquet')",
]


@pytest.mark.parametrize("query", REFUSED + OUTSIDE)
def test_writes_and_reads_outside_the_store_are_refused_in_one_line(store, query):
    duckdb.execute(f"COPY (SELECT 42 AS secret) TO '{store.parent / 'outside.parquet'}'")
    before = files(store)
    result = ratchet_sql(store, query.format(root=store, tmp=store.parent))
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    expected = "ratchet sql is read-only" + ("" if query in REFUSED else f" and reads only files under the store ({store})")
    assert lines[0].startswith(f"error: {expected}"), lines[0]
    assert files(store) == before
    assert json.loads(ratchet_sql(store, "SELECT count(*) AS n FROM runs").stdout) == [{"n": 1}]


def test_queries_still_work(store):
    result = ratchet_sql(store, "SELECT status, count(*) AS n FROM runs GROUP BY status")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"status": "running", "n": 1}]
    bad = ratchet_sql(store, "SELECT nope FROM candidates")
    assert bad.exit_code == 1 and "SQL error" in bad.output and "nope" in bad.output


def test_the_catalog_opens_in_a_plain_duckdb_client(store):
    written = runner.invoke(app, ["catalog", "--store", str(store)])
    assert written.exit_code == 0, written.output
    con = duckdb.connect(str(store / "catalog.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM runs_current").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM executions").fetchone() == (1,)
    finally:
        con.close()


def test_a_query_that_hits_a_damaged_page_points_to_ratchet_check(store):
    """Footer intact, pages garbage: the view binds, the scan fails; the message says
    what to run, and `ratchet check` (which decodes every page) names the part."""
    (part,) = open_store(str(store)).part_files("scores", "run1")
    data = bytearray(Path(part).read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    data[4 : len(data) - footer] = b"\xff" * (len(data) - footer - 4)
    Path(part).write_bytes(bytes(data))
    result = ratchet_sql(store, "SELECT sum(value) FROM scores")
    assert result.exit_code == 1 and "ratchet check" in result.output, result.output
    checked = runner.invoke(app, ["check", "--store", str(store)])
    assert checked.exit_code == 1 and "scores" in checked.output and "run1" in checked.output
