"""Parts a process wrote are read back from memory only while the file on disk is the one
it wrote; the rows are the same as a read from disk."""

from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

from schemas.arrow import to_arrow_schema
from schemas.tables import TABLES
from storage import part_cache
from storage.store import TableStore


def part_path(store: TableStore, table: str, run_id: str, stage: str, key: str) -> str:
    return f"{store.partition_dir(table, run_id)}/{stage}-{key}.parquet"


@pytest.mark.parametrize("table", sorted(TABLES))
def test_a_remembered_part_reads_as_the_file_does(tmp_path, make_row, table: str) -> None:
    store = TableStore(str(tmp_path / "store"))
    rows = [make_row(table, "run1", 0), make_row(table, "run1", 1, nulls=True)]
    store.write_part(table, "run1", "stage", "k1", rows)
    path = part_path(store, table, "run1", "stage", "k1")
    assert part_cache.recall(path) is not None
    from_disk = pq.read_table(path, schema=to_arrow_schema(TABLES[table].model))
    assert store.read_files(TABLES[table], [path]).equals(from_disk)
    assert store.read_part(table, "run1", "stage", "k1") == rows


def test_a_part_replaced_by_another_process_is_read_from_disk(tmp_path, make_row) -> None:
    store, other = TableStore(str(tmp_path / "store")), TableStore(str(tmp_path / "other"))
    first, second = make_row("scores", "r", 0), make_row("scores", "r", 1)
    store.write_part("scores", "r", "score", "k", [first])
    other.write_part("scores", "r", "score", "k", [second])
    path = part_path(store, "scores", "r", "score", "k")
    os.replace(_copy(part_path(other, "scores", "r", "score", "k"), tmp_path), path)  # a new file, as a retry elsewhere
    assert part_cache.recall(path) is None
    assert store.read_part("scores", "r", "score", "k") == [second]


def test_a_removed_part_is_forgotten(tmp_path, make_row) -> None:
    store = TableStore(str(tmp_path / "store"))
    store.write_part("scores", "r", "score", "k", [make_row("scores", "r", 0)])
    path = part_path(store, "scores", "r", "score", "k")
    store.delete_part("scores", "r", "score", "k")
    assert part_cache.recall(path) is None
    assert store.read_rows("scores", "r") == []


def test_the_cache_stays_within_its_bound(tmp_path, make_row, monkeypatch) -> None:
    store = TableStore(str(tmp_path / "store"))
    store.write_part("scores", "r", "score", "a", [make_row("scores", "r", 0)])
    size = part_cache.recall(part_path(store, "scores", "r", "score", "a")).nbytes
    monkeypatch.setattr(part_cache, "MAX_BYTES", 2 * size)
    for key in "bcd":
        store.write_part("scores", "r", "score", key, [make_row("scores", "r", 0)])
    held = [k for k in "abcd" if part_cache.recall(part_path(store, "scores", "r", "score", k)) is not None]
    assert held == ["c", "d"]  # the least recently written went first


def _copy(path: str, tmp_path) -> str:
    copy = tmp_path / "copy.parquet"
    copy.write_bytes(open(path, "rb").read())
    return str(copy)
