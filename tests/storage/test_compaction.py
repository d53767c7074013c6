"""Compaction keeps every row exactly once, also when it crashes between its steps."""

from __future__ import annotations

from collections import Counter

import pytest

from storage import compaction
from storage import fs as storefs
from storage.catalog import sql
from storage.errors import TerminalError
from storage.store import TableStore


def _partition_files(store: TableStore, table: str, run_id: str) -> list[str]:
    """Every file name in a run partition, hidden ones included."""
    paths = storefs.list_files(store.location, store.partition_dir(table, run_id), recursive=False)
    return [path.rsplit("/", 1)[-1] for path in paths]


class Crash(Exception):
    """Stands for the process dying at a given step."""


def _fill(store: TableStore, make_row) -> list:
    """Three score parts (one empty), two execution parts, and another run."""
    for part in range(3):
        rows = [make_row("scores", "run1", 10 * part + i) for i in range(part)]
        store.write_part("scores", "run1", "score", f"k{part}", rows)
    for part in range(2):
        store.write_part("executions", "run1", "execute", f"k{part}", [make_row("executions", "run1", part)])
    store.write_part("scores", "run2", "score", "k0", [make_row("scores", "run2", 99)])
    return _snapshot(store)


def _snapshot(store: TableStore) -> list:
    return sorted(
        (row.model_dump_json() for table in ("scores", "executions") for row in store.read_rows(table)),
    )


def test_compaction_merges_parts_and_keeps_rows(store: TableStore, make_row) -> None:
    before = _fill(store, make_row)
    leftover = f"{store.partition_dir('scores', 'run1')}/.score-k9.parquet.0a1b.tmp"
    with store.location.fs.open_output_stream(leftover) as out:
        out.write(b"half a part from a crashed writer")

    assert store.compact("run1") == {"scores": (3, 1), "executions": (2, 1)}
    assert _snapshot(store) == before
    assert not [name for name in _partition_files(store, "scores", "run1") if name.startswith(".")]
    assert [p.rsplit("/", 1)[-1].split("-")[0] for p in store.part_files("scores", "run1")] == ["compacted"]
    assert [p.rsplit("/", 1)[-1] for p in store.part_files("scores", "run2")] == ["score-k0.parquet"]
    assert store.compact("run1") == {"scores": (1, 1), "executions": (1, 1)}
    assert _snapshot(store) == before


def test_compacted_parts_stay_addressable_and_read_only(store: TableStore, make_row) -> None:
    _fill(store, make_row)
    part2 = store.read_part("scores", "run1", "score", "k2")
    store.compact("run1")

    assert store.has_part("scores", "run1", "score", "k0")
    assert store.read_part("scores", "run1", "score", "k0") == []
    assert store.read_part("scores", "run1", "score", "k2") == part2
    with pytest.raises(TerminalError, match="run 'run1' was compacted"):
        store.write_part("scores", "run1", "score", "k2", part2)
    with pytest.raises(TerminalError, match="compacted and read-only"):
        store.delete_part("scores", "run1", "score", "k2")


def test_compacting_again_folds_in_new_parts(store: TableStore, make_row) -> None:
    _fill(store, make_row)
    store.compact("run1")
    late = [make_row("scores", "run1", 500)]
    store.write_part("scores", "run1", "score", "late", late)
    before = _snapshot(store)

    assert store.compact("run1")["scores"] == (2, 1)
    assert _snapshot(store) == before
    assert store.read_part("scores", "run1", "score", "late") == late
    assert store.has_part("scores", "run1", "score", "k1")
    names = _partition_files(store, "scores", "run1")
    assert len([n for n in names if n.startswith("_manifest-")]) == 1


def _crash_writing_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    real = storefs.publish

    def publish(location, path, data):
        if path.rsplit("/", 1)[-1].startswith("_manifest-"):
            raise Crash(path)
        real(location, path, data)

    monkeypatch.setattr(storefs, "publish", publish)


def _crash_after_one_delete(monkeypatch: pytest.MonkeyPatch) -> None:
    """The last input (part k2, two rows) is gone, the others are not."""

    def delete_inputs(loc, directory, manifest):
        storefs.delete(loc, f"{directory}/{manifest.inputs[-1]}")
        raise Crash(manifest.inputs[-1])

    monkeypatch.setattr(compaction, "_delete_inputs", delete_inputs)


def _crash_before_promote(monkeypatch: pytest.MonkeyPatch) -> None:
    def promote(loc, directory, manifest):
        raise Crash(manifest.pending_name)

    monkeypatch.setattr(compaction, "_promote", promote)


def _crash_mid_promote(monkeypatch: pytest.MonkeyPatch) -> None:
    """S3 renames by copy + delete: the copy landed, the delete did not."""

    def promote(loc, directory, manifest):
        loc.fs.copy_file(f"{directory}/{manifest.pending_name}", f"{directory}/{manifest.merged_name}")
        raise Crash(manifest.merged_name)

    monkeypatch.setattr(compaction, "_promote", promote)


CRASHES = {
    "writing-manifest": _crash_writing_manifest,
    "after-one-delete": _crash_after_one_delete,
    "before-promote": _crash_before_promote,
    "mid-promote": _crash_mid_promote,
}


@pytest.mark.parametrize("crash", sorted(CRASHES))
def test_a_crashed_compaction_never_duplicates_and_rolls_forward(store: TableStore, make_row, crash: str) -> None:
    before = _fill(store, make_row)
    ids_before = {r.execution_id for r in store.read_rows("scores")}
    part2 = store.read_part("scores", "run1", "score", "k2")

    with pytest.MonkeyPatch.context() as patch:
        CRASHES[crash](patch)
        with pytest.raises(Crash):
            store.compact("run1")

    seen = [r.execution_id for r in store.read_rows("scores")]
    assert max(Counter(seen).values()) == 1 and set(seen) <= ids_before
    duck = sql(store, "SELECT execution_id, count(*) AS n FROM scores GROUP BY ALL").to_pylist()
    assert all(row["n"] == 1 for row in duck)
    assert store.has_part("scores", "run1", "score", "k2")
    assert store.read_part("scores", "run1", "score", "k2") == part2

    store.compact("run1")
    assert _snapshot(store) == before
    names = _partition_files(store, "scores", "run1")
    assert not [n for n in names if n.startswith("_compacted-")]
