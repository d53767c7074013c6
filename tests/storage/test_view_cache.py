"""The catalog's cached view layout (storage.catalog.uniform_tables): a table whose parts
share one schema gets a plain view, read from a cache outside the store; a new, changed
or damaged part is seen by the very next query; `ratchet sql` on a local store imports
neither boto3 nor pandas nor pyarrow.dataset."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.arrow import rows_to_table, to_arrow_schema
from schemas.rows import ScoreRow
from schemas.tables import TABLES
from storage import catalog
from storage import cache
from storage import fs as storefs
from storage.catalog import connect, sql
from storage.store import TableStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RATCHET_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _count(store: TableStore, table: str = "scores") -> int:
    return sql(store, f"SELECT count(*) AS n FROM {table}").to_pylist()[0]["n"]


def _view(store: TableStore, table: str) -> str:
    con = connect(store)
    try:
        return con.execute(f"SELECT sql FROM duckdb_views() WHERE view_name = '{table}'").fetchone()[0]
    finally:
        con.close()


def test_a_new_part_shows_in_the_next_query_and_the_store_gets_no_file(store: TableStore, make_row, cache_dir) -> None:
    store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", i) for i in range(3)])
    before = storefs.list_files(store.location, store.location.root, recursive=True)
    assert _count(store) == 3
    assert _count(store) == 3  # the cached layout
    assert storefs.list_files(store.location, store.location.root, recursive=True) == before
    assert [p.name for p in cache_dir.iterdir()] == [cache.cache_file("views", store.root_uri).name]

    store.write_part("scores", "run1", "score", "b", [make_row("scores", "run1", 7)])
    store.write_part("scores", "run2", "score", "a", [make_row("scores", "run2", 1)])
    assert _count(store) == 5
    store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", 0)])  # a retried stage
    assert _count(store) == 3
    store.compact("run1")
    assert _count(store) == 3
    assert "union_by_name" not in _view(store, "scores")


def test_parts_with_different_columns_are_read_by_name(local_store: TableStore, make_row) -> None:
    """A part written before a column existed: the view unions by name, the old rows
    read NULL in the new column."""
    local_store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", 0)])
    assert "union_by_name" not in _view(local_store, "scores")
    old = rows_to_table(ScoreRow, [make_row("scores", "run0", 1)]).drop_columns(["reason"])
    directory = Path(local_store.partition_dir("scores", "run0"))
    directory.mkdir(parents=True)
    pq.write_table(old, directory / "score-old.parquet")
    assert "union_by_name" in _view(local_store, "scores")
    rows = sql(local_store, "SELECT run_id, reason FROM scores ORDER BY run_id").to_pylist()
    assert [r["run_id"] for r in rows] == ["run0", "run1"] and rows[0]["reason"] is None


def test_a_part_damaged_after_it_was_cached_is_named(local_store: TableStore, make_row) -> None:
    for key in ("a", "b"):
        local_store.write_part("scores", "run1", "score", key, [make_row("scores", "run1", 0)])
    assert _count(local_store) == 2
    damaged = Path(local_store.part_files("scores")[1])
    damaged.write_bytes(damaged.read_bytes()[:100])
    with pytest.raises(duckdb.Error, match=f"{damaged.name}.*ratchet check --quarantine"):
        sql(local_store, "SELECT count(*) FROM scores")
    assert _count(local_store, "runs") == 0  # the other views still answer


def test_a_corrupt_or_stale_cache_costs_time_not_rows(local_store: TableStore, make_row) -> None:
    local_store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", 0)])
    path = cache.cache_file("views", local_store.root_uri)
    assert _count(local_store) == 1
    path.write_text("{not json")
    assert _count(local_store) == 1
    entries = json.loads(path.read_text())
    entries["scores"] = {"/elsewhere/gone.parquet": [1, 2, "x"]}
    path.write_text(json.dumps(entries))
    local_store.write_part("scores", "run1", "score", "b", [make_row("scores", "run1", 1)])
    assert _count(local_store) == 2
    assert set(json.loads(path.read_text())["scores"]) == set(local_store.part_files("scores"))


def test_empty_views_have_the_types_duckdb_reads_from_the_parts() -> None:
    """The direct Arrow -> DuckDB type names match DuckDB's own reading of the schema."""
    con = duckdb.connect()
    for table, spec in TABLES.items():
        schema = to_arrow_schema(spec.model)
        expected = [str(t) for t in con.from_arrow(schema.empty_table()).types]
        assert [catalog._duckdb_type(field.type) for field in schema] == expected, table
    assert catalog._duckdb_type(pa.large_string()) is None  # unknown: asks DuckDB instead


LIGHT = """
import json, sys
from typer.testing import CliRunner
from cli.main import app
done = CliRunner().invoke(app, ["sql", "SELECT count(*) AS n FROM scores", "--store", sys.argv[1], "--format", "json"])
assert done.exit_code == 0, done.output
heavy = sorted(m for m in ("boto3", "pandas", "pyarrow.dataset", "prefect", "mlflow", "duckdb_extension_httpfs")
               if m in sys.modules)
print(json.dumps({"rows": json.loads(done.stdout), "heavy": heavy}))
"""


@pytest.mark.integration
def test_ratchet_sql_on_a_local_store_loads_no_s3_or_dataframe_modules(local_store: TableStore, make_row) -> None:
    local_store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", 0)])
    done = subprocess.run([sys.executable, "-c", LIGHT, local_store.root_uri], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"rows": [{"n": 1}], "heavy": []}
