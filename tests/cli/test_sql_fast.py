"""`ratchet sql`'s light path (cli.sql_fast): after one full `ratchet sql`, an unchanged
local store answers with DuckDB alone, the same printed result; any change to the store
takes the full path again, so no query sees stale rows; the light path is as confined as
the full one."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from cli import sql_fast
from cli.text_table import text_table
from schemas.tables import TABLES
from storage.store import open_store

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("storage_test_rows", ROOT / "tests" / "storage" / "conftest.py")
_rows = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rows)
build_row = _rows.build_row


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RATCHET_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "store"
    s = open_store(str(root))
    for table in TABLES:
        s.write_part(table, "run1", "stage", "k", [build_row(table, "run1")])
    return root


def ratchet(*args: str) -> subprocess.CompletedProcess:
    """The `ratchet` script's own entry point, in a fresh process."""
    code = "import sys; sys.argv[0] = 'ratchet'; from cli.entry import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


def light(args: list[str], capsys) -> str | None:
    """What the light path prints for ``args``; None when it hands over to the full CLI."""
    answered = sql_fast.run(args)
    out = capsys.readouterr().out
    return out if answered else None


def test_parse_takes_only_the_plain_sql_command_line():
    assert sql_fast.parse(["sql", "SELECT 1"]) == ("SELECT 1", None, "table")
    assert sql_fast.parse(["sql", "--store", "/s", "SELECT 1", "--format=json"]) == ("SELECT 1", "/s", "json")
    assert sql_fast.parse(["sql", "SELECT 1", "--store=/s"]) == ("SELECT 1", "/s", "table")
    for argv in (["sql"], ["sql", "--help"], ["sql", "SELECT 1", "--format", "csv"], ["sql", "a", "b"],
                 ["sql", "SELECT 1", "--store"], ["runs"], []):
        assert sql_fast.parse(argv) is None, argv


def test_text_table_boxes_values_and_says_how_many_rows_are_left_out():
    assert text_table(["n", "name"], [["1", "a"], ["22", ""]]).splitlines() == [
        "┏━━━━┳━━━━━━┓",
        "┃ n  ┃ name ┃",
        "┡━━━━╇━━━━━━┩",
        "│ 1  │ a    │",
        "│ 22 │      │",
        "└────┴──────┘",
    ]
    assert text_table(["x"], [[str(i)] for i in range(5)], max_rows=2).splitlines()[-1] == \
        "... 3 more rows (use --format csv for all)"


def test_an_unchanged_store_answers_on_the_light_path_with_the_same_result(store, capsys):
    args = ["sql", "SELECT run_id, status, count(*) AS n FROM runs GROUP BY ALL", "--store", str(store)]
    assert light(args, capsys) is None  # nothing kept yet
    full = ratchet(*args)  # the full path, which keeps the view statements
    assert full.returncode == 0, full.stderr
    assert "run1" in full.stdout and "running" in full.stdout
    assert light(args, capsys) == full.stdout
    assert ratchet(*args).stdout == full.stdout
    answer = light(args + ["--format", "json"], capsys)
    assert json.loads(answer) == [{"run_id": "run1", "status": "running", "n": 1}]


def test_any_change_to_the_store_takes_the_full_path_and_no_query_sees_stale_rows(store, capsys):
    query = ["sql", "SELECT count(*) AS n FROM scores", "--store", str(store), "--format", "json"]
    assert ratchet(*query).returncode == 0
    assert json.loads(light(query, capsys)) == [{"n": 1}]
    s = open_store(str(store))
    s.write_part("scores", "run2", "score", "a", [build_row("scores", "run2", i) for i in range(3)])
    assert light(query, capsys) is None  # a new part: the digest differs
    assert json.loads(ratchet(*query).stdout) == [{"n": 4}]
    assert json.loads(light(query, capsys)) == [{"n": 4}]
    s.write_part("scores", "run2", "score", "a", [build_row("scores", "run2", 0)])  # a retried stage
    assert light(query, capsys) is None
    assert json.loads(ratchet(*query).stdout) == [{"n": 2}]


def test_the_light_path_is_confined_to_the_store_like_the_full_one(store, capsys):
    duckdb.execute(f"COPY (SELECT 42 AS secret) TO '{store.parent / 'outside.parquet'}'")
    assert ratchet("sql", "SELECT 1 AS one", "--store", str(store)).returncode == 0
    assert light(["sql", "SELECT 1 AS one", "--store", str(store)], capsys) is not None
    for query in (f"SELECT * FROM read_parquet('{store.parent}/outside.parquet')",
                  f"SELECT * FROM read_parquet('{store}/../outside.parquet')",
                  "SELECT * FROM read_text('/etc/hostname')",
                  f"COPY (SELECT 1 AS x) TO '{store}/tables/runs/run_id=run1/zz.parquet'",
                  "SET enable_external_access = true"):
        assert light(["sql", query, "--store", str(store)], capsys) is None, query  # refused: the full path words it
        done = ratchet("sql", query, "--store", str(store))
        assert done.returncode == 1 and "ratchet sql is read-only" in done.stderr + done.stdout, query
    assert not (store / "tables" / "runs" / "run_id=run1" / "zz.parquet").exists()
