"""One damaged part: the other tables stay queryable, the damaged table's error names
the part, `check_store` finds it, `quarantine` moves it aside (local and S3)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemas.tables import TABLES
from storage import fs as storefs
from storage.catalog import connect, sql, write_catalog
from storage.check import check_store, quarantine, quarantine_path, record_damage
from storage.store import TableStore


def _fill(store: TableStore, make_row) -> None:
    """run1 and run2: two parts of every table each; run1's status events say finished."""
    for run in ("run1", "run2"):
        for table in TABLES:
            for index in range(2):
                store.write_part(table, run, "stage", f"k{index}", [make_row(table, run, index)])
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    running = make_row("runs", "run1").model_copy(update={"status": "running", "event_at": t0, "error": None})
    done = running.model_copy(update={"status": "finished", "event_at": t0 + timedelta(minutes=5)})
    store.write_part("runs", "run1", "stage", "k0", [running])
    store.write_part("runs", "run1", "stage", "k1", [done])


def _overwrite(store: TableStore, path: str, data: bytes) -> None:
    with store.location.fs.open_output_stream(path) as out:
        out.write(data)


def _truncate(store: TableStore, table: str, run_id: str, index: int = 1) -> str:
    path = store.part_files(table, run_id)[index]
    data = storefs.read_bytes(store.location, path)
    _overwrite(store, path, data[: len(data) // 2])
    return path


def test_a_healthy_store_checks_clean(store: TableStore, make_row) -> None:
    _fill(store, make_row)
    result = check_store(store)
    assert result.ok and result.checked == 2 * 2 * len(TABLES)
    assert check_store(store, "run2").checked == 2 * len(TABLES)


@pytest.mark.parametrize("index", [0, 1], ids=["first-part", "second-part"])
def test_one_truncated_part_breaks_only_its_own_table(store: TableStore, make_row, index) -> None:
    _fill(store, make_row)
    path = _truncate(store, "executions", "run2", index)
    name = path.rsplit("/", 1)[-1]
    assert sql(store, "SELECT count(*) AS n FROM runs").to_pylist() == [{"n": 4}]
    assert sql(store, "SELECT status FROM runs_current WHERE run_id = 'run1'").to_pylist() == [{"status": "finished"}]
    assert sql(store, "SELECT count(*) AS n FROM scores").to_pylist() == [{"n": 4}]
    for query in ("SELECT count(*) FROM executions", "SELECT * FROM executions WHERE run_id = 'run1'",
                  "SELECT count(*) FROM executions e JOIN runs r USING (run_id) WHERE e.status = 'ok'"):
        with pytest.raises(duckdb.Error, match="ratchet check --quarantine"):  # never silently empty
            sql(store, query)
    with pytest.raises(duckdb.Error) as failure:
        sql(store, "SELECT count(*) FROM executions")
    message = str(failure.value)
    assert "'executions' cannot be read" in message and name in message and "run2" in message
    assert "ratchet check --quarantine" in message and "ratchet resume run2" in message
    con = connect(store)  # the damaged view still has the table's columns
    try:
        assert len(con.execute("DESCRIBE executions").fetchall()) == len(TABLES["executions"].model.model_fields)
    finally:
        con.close()

    result = check_store(store)
    assert [(d.part.table, d.part.run_id, d.part.stage, d.part.name) for d in result.damaged] == [
        ("executions", "run2", "stage", name)
    ]
    assert check_store(store, "run1").ok


def test_the_catalog_file_names_the_damaged_part_too(local_store: TableStore, make_row, tmp_path) -> None:
    _fill(local_store, make_row)
    name = _truncate(local_store, "scores", "run1").rsplit("/", 1)[-1]
    path = write_catalog(local_store, tmp_path / "catalog.duckdb")
    con = duckdb.connect(str(path), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM candidates").fetchone() == (4,)
        with pytest.raises(duckdb.Error, match=name):
            con.execute("SELECT * FROM scores").fetchall()
    finally:
        con.close()


def test_check_reads_row_data_and_schemas_not_only_footers(local_store: TableStore, make_row) -> None:
    _fill(local_store, make_row)
    # A part whose pages are garbage but whose footer is intact.
    scores = local_store.part_files("scores", "run1")[0]
    rows = pa.table({name: pa.array([f"{'x' * 5000}{i}" for i in range(50)]) for name in ("run_id", "filler")})
    sink = pa.BufferOutputStream()
    pq.write_table(local_store.read_files(TABLES["scores"], [scores]), sink, compression="zstd")
    data = bytearray(sink.getvalue().to_pybytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    for offset in range(4, len(data) - footer):
        data[offset] = 0xFF
    _overwrite(local_store, scores, bytes(data))
    # A stray file with other columns in a run partition (what `COPY ... TO` would leave).
    junk = local_store.partition_dir("runs", "run1") + "/zz.parquet"
    pq.write_table(rows, junk)

    damaged = {(d.part.table, d.part.name): d.error for d in check_store(local_store).damaged}
    assert set(damaged) == {("scores", scores.rsplit("/", 1)[-1]), ("runs", "zz.parquet")}
    assert "schema differs" in damaged[("runs", "zz.parquet")] and "missing columns" in damaged[("runs", "zz.parquet")]


def test_quarantine_moves_the_part_and_marks_the_run(store: TableStore, make_row) -> None:
    _fill(store, make_row)
    path = _truncate(store, "executions", "run1")
    (damage,) = check_store(store).damaged
    now = datetime(2026, 2, 1, tzinfo=UTC)
    target = quarantine(store, damage, now)
    assert target == store.location.uri_of(quarantine_path(store, damage.part))
    assert target.endswith("/quarantine/executions/run_id=run1/stage-k1.parquet")
    assert not storefs.exists(store.location, path)
    assert not store.has_part("executions", "run1", "stage", "k1")
    assert storefs.exists(store.location, target.removeprefix("s3://"))
    note = json.loads(storefs.read_bytes(store.location, target.removeprefix("s3://") + ".json"))
    assert note["table"] == "executions" and note["stage"] == "stage" and note["run_id"] == "run1"
    assert note["quarantined_at"] == now.isoformat() and note["error"] == damage.error

    event = record_damage(store, "run1", [damage], now)
    assert event.status == "damaged" and "executions/stage-k1.parquet" in event.error
    assert check_store(store).ok
    assert sql(store, "SELECT count(*) AS n FROM executions").to_pylist() == [{"n": 3}]
    current = sql(store, "SELECT status, loop, config_json FROM runs_current WHERE run_id = 'run1'").to_pylist()
    finished = store.read_rows("runs", "run1")[1]
    assert current == [{"status": "damaged", "loop": finished.loop, "config_json": finished.config_json}]

    # Damaged again after a resume rewrote it: the first quarantined copy stays.
    store.write_part("executions", "run1", "stage", "k1", [make_row("executions", "run1", 1)])
    _truncate(store, "executions", "run1")
    (again,) = check_store(store).damaged
    second = quarantine(store, again, now + timedelta(hours=1))
    assert second != target and second.endswith(".parquet")
    assert storefs.exists(store.location, target.removeprefix("s3://"))


def test_a_damaged_compacted_part_takes_its_manifest(local_store: TableStore, make_row) -> None:
    _fill(local_store, make_row)
    local_store.compact("run1")
    (merged,) = local_store.part_files("scores", "run1")
    assert local_store.has_part("scores", "run1", "stage", "k0")
    data = storefs.read_bytes(local_store.location, merged)
    _overwrite(local_store, merged, data[:100])
    (damage,) = check_store(local_store, "run1").damaged
    assert damage.part.stage == "compacted"
    target = quarantine(local_store, damage)
    assert not local_store.has_part("scores", "run1", "stage", "k0")
    moved = sorted(p.rsplit("/", 1)[-1] for p in storefs.list_files(local_store.location, target.rsplit("/", 1)[0],
                                                                     recursive=False))
    assert any(name.startswith("_manifest-") for name in moved)
    local_store.write_part("scores", "run1", "stage", "k0", [make_row("scores", "run1", 0)])
