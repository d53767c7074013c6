"""TableStore parts, tables, blobs and markers, on a local folder and on S3 (moto)."""

from __future__ import annotations

import hashlib
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.arrow import rows_to_table, to_arrow_schema
from schemas.rows import RunRow, ScoreRow
from schemas.tables import TABLES
from storage.errors import TerminalError, TransientError
from storage.store import DEFAULT_STORE, TableStore, open_store


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_table_round_trips_with_its_exact_schema(store: TableStore, make_row, table: str) -> None:
    rows = [make_row(table, "run1", 0), make_row(table, "run1", 1, nulls=True)]
    store.write_part(table, "run1", "stage", "k1", rows)

    data = store.read(table)
    assert data.schema.equals(to_arrow_schema(TABLES[table].model), check_metadata=False)
    assert store.read_rows(table) == rows
    assert store.read_part(table, "run1", "stage", "k1") == rows


def test_part_path_is_derived_from_table_run_stage_and_key(store: TableStore, make_row) -> None:
    uri = store.write_part("scores", "run1", "score", "abc123", [make_row("scores", "run1")])
    assert uri == f"{store.root_uri}/tables/scores/run_id=run1/score-abc123.parquet"
    assert store.write_part("scores", "run1", "score", "abc123", [make_row("scores", "run1")]) == uri


def test_retried_stage_overwrites_its_part_instead_of_duplicating(store: TableStore, make_row) -> None:
    first = [make_row("scores", "run1", i) for i in range(3)]
    store.write_part("scores", "run1", "score", "k", first)
    store.write_part("scores", "run1", "score", "k", first)
    assert store.read("scores").num_rows == 3

    retried = [make_row("scores", "run1", i) for i in range(10, 12)]
    store.write_part("scores", "run1", "score", "k", retried)
    assert store.read_rows("scores") == retried


def test_zero_rows_record_a_finished_stage(store: TableStore) -> None:
    assert not store.has_part("gate_decisions", "run1", "gate", "k")
    store.write_part("gate_decisions", "run1", "gate", "k", [])
    assert store.has_part("gate_decisions", "run1", "gate", "k")
    assert store.read_part("gate_decisions", "run1", "gate", "k") == []
    assert store.read("gate_decisions").num_rows == 0
    assert store.run_ids("gate_decisions") == ["run1"]


def test_nothing_written_reads_as_an_empty_table_with_the_schema(store: TableStore) -> None:
    data = store.read("runs")
    assert data.num_rows == 0
    assert data.schema.equals(to_arrow_schema(RunRow), check_metadata=False)
    assert store.read_rows("runs", "nope") == []
    assert store.run_ids("runs") == []


def test_read_selects_one_run_or_all(store: TableStore, make_row) -> None:
    store.write_part("scores", "run1", "score", "a", [make_row("scores", "run1", 0)])
    store.write_part("scores", "run1", "score", "b", [make_row("scores", "run1", 1)])
    store.write_part("scores", "123", "score", "a", [make_row("scores", "123", 2)])

    assert store.run_ids("scores") == ["123", "run1"]
    assert store.read("scores", "run1").num_rows == 2
    assert store.read("scores", "123").column("run_id").to_pylist() == ["123"]
    assert store.read("scores").num_rows == 3


def test_delete_part_removes_only_that_part(store: TableStore, make_row) -> None:
    store.write_part("registry", "run1", "register", "a", [make_row("registry", "run1", 0)])
    store.write_part("registry", "run1", "register", "b", [make_row("registry", "run1", 1)])
    assert store.delete_part("registry", "run1", "register", "a")
    assert not store.delete_part("registry", "run1", "register", "a")
    assert not store.has_part("registry", "run1", "register", "a")
    assert [r.version for r in store.read_rows("registry")] == [1]


def test_write_arrow_takes_the_exact_schema(store: TableStore, make_row) -> None:
    rows = [make_row("scores", "run1", i) for i in range(4)]
    store.write_arrow("scores", "run1", "score", "k", rows_to_table(ScoreRow, rows))
    assert store.read_rows("scores") == rows

    loose = pa.table({"run_id": ["run1"], "value": [1.0]})
    with pytest.raises(TypeError, match="'scores'"):
        store.write_arrow("scores", "run1", "score", "k2", loose)
    with pytest.raises(ValueError, match="run_id other than"):
        store.write_arrow("scores", "other", "score", "k3", rows_to_table(ScoreRow, rows))


def test_hidden_files_in_a_partition_are_never_read(store: TableStore, make_row) -> None:
    store.write_part("scores", "run1", "score", "k", [make_row("scores", "run1")])
    directory = store.partition_dir("scores", "run1")
    stray = rows_to_table(ScoreRow, [make_row("scores", "run1", 9)])
    for name in ("_compacted-x.parquet", ".score-k.parquet.1234.tmp", ".hidden.parquet"):
        with store.location.fs.open_output_stream(f"{directory}/{name}") as out:
            pq.write_table(stray, out)
    assert store.read("scores").num_rows == 1


def test_bad_input_names_the_table_and_value(store: TableStore, make_row) -> None:
    score = make_row("scores", "run1")
    with pytest.raises(TypeError, match="'executions' takes ExecutionRow rows; row 0 is ScoreRow"):
        store.write_part("executions", "run1", "execute", "k", [score])
    with pytest.raises(ValueError, match="'scores': row 0 has run_id 'run1'.*run 'run2'"):
        store.write_part("scores", "run2", "score", "k", [score])
    with pytest.raises(KeyError, match="unknown table 'scorez'"):
        store.write_part("scorez", "run1", "score", "k", [score])
    with pytest.raises(ValueError, match="invalid part key 'a/b'"):
        store.write_part("scores", "run1", "score", "a/b", [score])
    with pytest.raises(ValueError, match="invalid stage 'sco-re'"):
        store.write_part("scores", "run1", "sco-re", "k", [score])
    with pytest.raises(ValueError, match="invalid stage 'compacted'"):
        store.write_part("scores", "run1", "compacted", "k", [score])
    with pytest.raises(ValueError, match=r"invalid run_id '\.\.'"):
        store.read("scores", "..")
    with pytest.raises(TerminalError, match="part score-missing.parquet of table 'scores', run 'run1': no such part"):
        store.read_part("scores", "run1", "score", "missing")


def test_blobs_are_content_addressed_and_written_once(store: TableStore) -> None:
    data = b"def place(n):\n    return []\n"
    sha = store.put_blob(data)
    assert sha == hashlib.sha256(data).hexdigest()
    assert store.put_blob(data) == sha
    assert store.get_blob(sha) == data
    assert store.blob_uri(sha) == f"{store.root_uri}/blobs/{sha}"
    blobs = store.location.fs.get_file_info(store.location.path("blobs", sha))
    assert blobs.size == len(data)


def test_corrupted_blob_is_detected(store: TableStore) -> None:
    sha = store.put_blob(b"original")
    with store.location.fs.open_output_stream(store.location.path("blobs", sha)) as out:
        out.write(b"tampered")
    with pytest.raises(TerminalError, match=f"blob {sha} .* is corrupted"):
        store.get_blob(sha)
    with pytest.raises(TerminalError, match=f"reading blob {'0' * 64}"):
        store.get_blob("0" * 64)
    with pytest.raises(ValueError, match="invalid blob id 'xyz'"):
        store.get_blob("xyz")


def test_markers(store: TableStore) -> None:
    assert not store.has_marker("run1", "execute.round-3")
    store.put_marker("run1", "execute.round-3")
    store.put_marker("run1", "execute.round-3")
    assert store.has_marker("run1", "execute.round-3")
    assert not store.has_marker("run2", "execute.round-3")


def test_open_store_resolves_argument_then_env_then_default(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RATCHET_STORE", raising=False)
    assert open_store().local_path == (tmp_path / DEFAULT_STORE).resolve()
    monkeypatch.setenv("RATCHET_STORE", str(tmp_path / "env-store"))
    assert open_store().root_uri == str(tmp_path / "env-store")
    assert open_store(str(tmp_path / "arg")).root_uri == str(tmp_path / "arg")
    with pytest.raises(ValueError, match="scheme 'gs'"):
        open_store("gs://bucket/x")


@pytest.mark.integration
def test_s3_store_uri_and_no_local_path(s3_store: TableStore) -> None:
    assert s3_store.root_uri.startswith("s3://ratchet-test/")
    assert not s3_store.is_local
    with pytest.raises(ValueError, match="no local path"):
        s3_store.local_path


def test_local_publish_leaves_no_temp_file_when_it_fails(
    local_store: TableStore, make_row, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [make_row("scores", "run1", 0)]
    store_dir = local_store.local_path / "tables" / "scores" / "run_id=run1"
    local_store.write_part("scores", "run1", "score", "k", rows)

    def crash(src: str, dst: str) -> None:
        raise OSError(5, "simulated I/O error")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(TransientError, match="writing part score-k.parquet of table 'scores', run 'run1'"):
        local_store.write_part("scores", "run1", "score", "k", [make_row("scores", "run1", 5)])
    monkeypatch.undo()
    assert os.listdir(store_dir) == ["score-k.parquet"]
    assert local_store.read_rows("scores") == rows
