"""The table store: append-only Parquet parts, content-addressed blobs, completion markers.

Layout under the store root (DESIGN.md, "Storage")::

    tables/<table>/run_id=<run_id>/<stage>-<key>.parquet   one part per stage execution
    blobs/<sha256>                                          artifacts, written once
    markers/run_id=<run_id>/<name>                          "stage finished" flags

A part's name is the writing stage plus a caller-supplied deterministic key (a hash of
the stage's inputs), so a retried stage replaces its own part and can never duplicate
rows. Parts are published atomically (see ``storage.fs.publish``). Files whose names
start with ``_`` or ``.`` are work in progress (temp files, compaction) and are never
read as table data, here or by the DuckDB views.

A finished run's parts can be merged by ``compact`` (``storage.compaction``); a
compacted part stays addressable through ``has_part``/``read_part``.

``pyarrow.parquet``, ``pyarrow.dataset`` (which imports pandas) and ``pyarrow.compute``
load inside the methods that write or read parts: opening a store (every CLI command,
``ratchet sql``) pays for none of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
from pydantic import BaseModel

from schemas.arrow import rows_to_table, table_to_rows, to_arrow_schema
from schemas.tables import TABLES, TableSpec, table_spec
from storage import compaction, part_cache
from storage import fs as storefs
from storage.errors import TerminalError, io_errors
from storage.uris import DEFAULT_STORE


_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_STAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class PartFile(NamedTuple):
    """A visible part as listed: its filesystem path, size in bytes and mtime (ns)."""

    path: str
    size: int
    mtime_ns: int


def open_store(uri: str | None = None) -> TableStore:
    """The store at ``uri``, else at ``$RATCHET_STORE``, else at ``./.ratchet``."""
    return TableStore(uri or os.environ.get("RATCHET_STORE") or DEFAULT_STORE)


def is_visible(name: str) -> bool:
    """Whether a file name in a run partition is table data (not a temp/compaction file)."""
    return name.endswith(".parquet") and not name.startswith(("_", "."))


def check_name(kind: str, value: str) -> str:
    """Names become path segments: only [A-Za-z0-9_.-], so no value can escape its folder."""
    if not isinstance(value, str) or not _NAME.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"invalid {kind} {value!r}: use only letters, digits, '_', '.', '-'")
    return value


def part_name(stage: str, key: str) -> str:
    """File name of a stage's part. Stages may not contain '-' (so stage 'a-b' + key 'c'
    cannot collide with stage 'a' + key 'b-c') nor start with '_'/'.' (hidden files);
    'compacted' is reserved for merged parts."""
    if not isinstance(stage, str) or not _STAGE.fullmatch(stage) or stage == compaction.MERGED_STAGE:
        raise ValueError(
            f"invalid stage {stage!r}: start with a letter or digit, then letters, digits, "
            f"'_' or '.' (no '-'); {compaction.MERGED_STAGE!r} is reserved"
        )
    return f"{stage}-{check_name('part key', key)}.parquet"


class TableStore:
    """Parquet tables, blobs and markers under one root URI (local path or s3://)."""

    def __init__(self, uri: str) -> None:
        self._loc = storefs.resolve(uri)

    def __repr__(self) -> str:
        return f"TableStore({self.root_uri!r})"

    @property
    def root_uri(self) -> str:
        """Absolute local path or ``s3://bucket/prefix``."""
        return self._loc.uri

    @property
    def is_local(self) -> bool:
        return self._loc.is_local

    @property
    def local_path(self) -> Path:
        """Root folder of a local store (S3 stores have none)."""
        if not self._loc.is_local:
            raise ValueError(f"store {self.root_uri} is on S3 and has no local path")
        return Path(self._loc.root)

    @property
    def location(self) -> storefs.Location:
        """Filesystem and root, for the compactor and the catalog."""
        return self._loc

    def partition_dir(self, table: str, run_id: str) -> str:
        table_spec(table)
        return self._loc.path("tables", table, f"run_id={check_name('run_id', run_id)}")

    # -- parts ------------------------------------------------------------------------

    def write_part(self, table: str, run_id: str, stage: str, key: str, rows: Sequence[BaseModel]) -> str:
        """Publish ``rows`` (possibly none: "done, nothing to write") as the part of
        ``stage``/``key`` in run ``run_id``, replacing any earlier attempt. Returns its URI."""
        spec = table_spec(table)
        name = part_name(stage, key)
        data = _rows_to_arrow(spec, check_name("run_id", run_id), rows)
        return self._publish_part(table, run_id, name, data)

    def write_arrow(self, table: str, run_id: str, stage: str, key: str, data: pa.Table) -> str:
        """Like ``write_part`` for a stage that already holds an Arrow table (millions of
        executions or steps are cheaper as columns than as pydantic objects). ``data``
        must have the table's exact schema."""
        spec = table_spec(table)
        name = part_name(stage, key)
        _check_arrow(spec, check_name("run_id", run_id), data)
        return self._publish_part(table, run_id, name, data)

    def _publish_part(self, table: str, run_id: str, name: str, data: pa.Table) -> str:
        """Refuses a part that a compaction already merged: rewriting it would count its
        rows twice."""
        directory = self.partition_dir(table, run_id)
        what = f"writing part {name} of table {table!r}, run {run_id!r}"
        with io_errors(what):
            merged = compaction.find_part(self._loc, directory, name)
            if merged is not None:
                raise TerminalError(
                    f"{what}: run {run_id!r} was compacted and {merged.merged_name} already "
                    "holds this part; a compacted run is read-only"
                )
            import pyarrow.parquet as pq

            sink = pa.BufferOutputStream()
            pq.write_table(data, sink, compression="zstd")
            path = f"{directory}/{name}"
            storefs.publish(self._loc, path, sink.getvalue())
            if self._loc.is_local:
                part_cache.remember(path, data)
        return self._loc.uri_of(path)

    def has_part(self, table: str, run_id: str, stage: str, key: str) -> bool:
        """Whether the part exists (as its own file or inside a compacted part)."""
        directory, name = self.partition_dir(table, run_id), part_name(stage, key)
        with io_errors(f"looking up part {name} of table {table!r}, run {run_id!r}"):
            if storefs.exists(self._loc, f"{directory}/{name}"):
                return True
            return compaction.find_part(self._loc, directory, name) is not None

    def read_part(self, table: str, run_id: str, stage: str, key: str) -> list[BaseModel]:
        """The rows of one part, as written (also after compaction)."""
        spec = table_spec(table)
        directory, name = self.partition_dir(table, run_id), part_name(stage, key)
        what = f"reading part {name} of table {table!r}, run {run_id!r}"
        with io_errors(what):
            if storefs.exists(self._loc, f"{directory}/{name}"):
                data = self.read_files(spec, [f"{directory}/{name}"])
            else:
                data = compaction.read_compacted_part(self, spec, directory, name)
        if data is None:
            raise TerminalError(f"{what}: no such part")
        return table_to_rows(spec.model, data)

    def has_own_part(self, table: str, run_id: str, stage: str, key: str) -> bool:
        """Whether the part exists as its own file: one existence check, no listing. Only
        a compacted run (read-only, finished) holds parts that this does not see."""
        directory, name = self.partition_dir(table, run_id), part_name(stage, key)
        with io_errors(f"looking up part {name} of table {table!r}, run {run_id!r}"):
            return storefs.exists(self._loc, f"{directory}/{name}")

    def read_parts_arrow(
        self, table: str, run_id: str, stage: str, keys: Sequence[str], columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows of several parts of one run and stage as one Arrow table (only
        ``columns`` if given), part after part in the order of ``keys``, each part's rows
        as written (also after compaction). A part that does not exist adds no rows.
        Reads only the named parts: a stage that knows its round's parts never pays for
        the rest of the run."""
        spec = table_spec(table)
        directory = self.partition_dir(table, run_id)
        names = [part_name(stage, key) for key in keys]
        wanted = list(columns) if columns is not None else to_arrow_schema(spec.model).names
        what = f"reading parts {stage}-* of table {table!r}, run {run_id!r}"
        pieces: list[pa.Table] = []
        with io_errors(what):
            direct: list[str] = []
            for name in names:
                path = f"{directory}/{name}"
                if storefs.exists(self._loc, path):
                    direct.append(path)
                    continue
                if direct:
                    pieces.append(self._read_columns(spec, direct, wanted))
                    direct = []
                data = compaction.read_compacted_part(self, spec, directory, name)
                if data is not None:
                    pieces.append(data.select(wanted))
            if direct:
                pieces.append(self._read_columns(spec, direct, wanted))
        if not pieces:
            return to_arrow_schema(spec.model).empty_table().select(wanted)
        return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)

    def read_part_arrow(
        self, table: str, run_id: str, stage: str, key: str, columns: Sequence[str] | None = None
    ) -> pa.Table | None:
        """One part as Arrow (only ``columns`` if given); None when there is no such part."""
        if not self.has_own_part(table, run_id, stage, key) and not self.has_part(table, run_id, stage, key):
            return None
        return self.read_parts_arrow(table, run_id, stage, [key], columns)

    def delete_part(self, table: str, run_id: str, stage: str, key: str) -> bool:
        """Remove a part (a transaction's rollback). False if there was none."""
        directory, name = self.partition_dir(table, run_id), part_name(stage, key)
        what = f"deleting part {name} of table {table!r}, run {run_id!r}"
        with io_errors(what):
            if compaction.find_part(self._loc, directory, name) is not None:
                raise TerminalError(f"{what}: run {run_id!r} is compacted and read-only")
            return storefs.delete(self._loc, f"{directory}/{name}")

    # -- tables -----------------------------------------------------------------------

    def read(self, table: str, run_id: str | None = None) -> pa.Table:
        """All rows of a table (of one run, or of every run) with the table's exact
        schema; an empty table with that schema when nothing was written."""
        spec = table_spec(table)
        with io_errors(f"reading table {table!r}" + (f", run {run_id!r}" if run_id is not None else "")):
            return self.read_files(spec, self.part_files(table, run_id))

    def read_rows(self, table: str, run_id: str | None = None) -> list[BaseModel]:
        return table_to_rows(table_spec(table).model, self.read(table, run_id))

    def run_ids(self, table: str) -> list[str]:
        """Runs with at least one part of ``table``."""
        runs = {path.rsplit("/", 2)[-2].removeprefix("run_id=") for path in self.part_files(table)}
        return sorted(runs)

    def part_files(self, table: str, run_id: str | None = None) -> list[str]:
        """Filesystem paths of the visible parts of a table (of one run, or of all)."""
        if run_id is None:
            directory = self._loc.path("tables", table_spec(table).name)
        else:
            directory = self.partition_dir(table, run_id)
        with io_errors(f"listing table {table!r}"):
            paths = storefs.list_files(self._loc, directory, recursive=run_id is None)
        return [p for p in paths if is_visible(p.rsplit("/", 1)[-1]) and p.rsplit("/", 2)[-2].startswith("run_id=")]

    def part_listing(self) -> dict[str, list[PartFile]]:
        """The visible parts of every table (``tables/<table>/run_id=<run>/<name>``) with
        their size and mtime, from one listing of ``tables/``: what the catalog checks its
        cached view layout against. Every table of ``TABLES`` has an entry."""
        root = self._loc.path("tables")
        listing: dict[str, list[PartFile]] = {name: [] for name in TABLES}
        with io_errors("listing the store's tables"):
            infos = storefs.list_file_infos(self._loc, root)
        for info in infos:
            segments = info.path[len(root) + 1 :].split("/")
            if len(segments) != 3 or segments[0] not in listing:
                continue
            if segments[1].startswith("run_id=") and is_visible(segments[2]):
                listing[segments[0]].append(PartFile(info.path, info.size, info.mtime_ns))
        return listing

    def read_files(self, spec: TableSpec, paths: Sequence[str]) -> pa.Table:
        """Parquet files -> one table with the exact schema of ``spec`` (callers wrap
        this in ``io_errors`` so failures name the table)."""
        schema = to_arrow_schema(spec.model)
        if not paths:
            return schema.empty_table()
        if (cached := self._cached(paths)) is not None:
            return cached
        import pyarrow.dataset as pads

        dataset = pads.dataset(list(paths), schema=schema, format="parquet", filesystem=self._loc.fs)
        return dataset.to_table()

    def _cached(self, paths: Sequence[str]) -> pa.Table | None:
        """The parts this process just wrote, from memory (``storage.part_cache``)."""
        tables = part_cache.recall_all(list(paths)) if self._loc.is_local else None
        return None if tables is None else tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def _read_columns(self, spec: TableSpec, paths: Sequence[str], columns: Sequence[str]) -> pa.Table:
        """Like ``read_files``, reading only ``columns`` (files in the order given)."""
        if (cached := self._cached(paths)) is not None:
            return cached.select(list(columns))
        import pyarrow.dataset as pads

        schema = to_arrow_schema(spec.model)
        dataset = pads.dataset(list(paths), schema=schema, format="parquet", filesystem=self._loc.fs)
        return dataset.to_table(columns=list(columns))

    def compact(self, run_id: str) -> dict[str, tuple[int, int]]:
        """Merge each table's parts of a finished run into one part; returns
        ``{table: (parts_before, parts_after)}`` for tables with parts in the run."""
        return compaction.compact_run(self, check_name("run_id", run_id))

    # -- blobs and markers ------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` once under its sha256 (hex), which is returned."""
        sha = hashlib.sha256(data).hexdigest()
        path = self._loc.path("blobs", sha)
        with io_errors(f"writing blob {sha}"):
            if not storefs.exists(self._loc, path):
                storefs.publish(self._loc, path, data)
        return sha

    def get_blob(self, sha: str) -> bytes:
        """The blob's bytes, verified against its name."""
        path = self._blob_path(sha)
        with io_errors(f"reading blob {sha} from {self.root_uri}"):
            data = storefs.read_bytes(self._loc, path)
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha:
            raise TerminalError(f"blob {sha} in {self.root_uri} is corrupted: its content hashes to {actual}")
        return data

    def has_blob(self, sha: str) -> bool:
        """Whether a blob is stored under ``sha``; False for a name that is no sha256."""
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            return False
        with io_errors(f"looking up blob {sha} in {self.root_uri}"):
            return storefs.exists(self._loc, self._blob_path(sha))

    def blob_uri(self, sha: str) -> str:
        return self._loc.uri_of(self._blob_path(sha))

    def _blob_path(self, sha: str) -> str:
        if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
            raise ValueError(f"invalid blob id {sha!r}: expected 64 lowercase hex digits (sha256)")
        return self._loc.path("blobs", sha)

    def put_marker(self, run_id: str, name: str) -> None:
        """Flag "``name`` finished in ``run_id``"; a multi-file stage writes it last."""
        path = self._marker_path(run_id, name)
        stamp = json.dumps({"at": datetime.now(UTC).isoformat()}).encode()
        with io_errors(f"writing marker {name!r} of run {run_id!r}"):
            storefs.publish(self._loc, path, stamp)

    def has_marker(self, run_id: str, name: str) -> bool:
        path = self._marker_path(run_id, name)
        with io_errors(f"looking up marker {name!r} of run {run_id!r}"):
            return storefs.exists(self._loc, path)

    def read_marker(self, run_id: str, name: str) -> bytes | None:
        """A marker's stamp (its bytes), or None when it is not set."""
        path = self._marker_path(run_id, name)
        with io_errors(f"reading marker {name!r} of run {run_id!r}"):
            if not storefs.exists(self._loc, path):
                return None
            return storefs.read_bytes(self._loc, path)

    def _marker_path(self, run_id: str, name: str) -> str:
        return self._loc.path("markers", f"run_id={check_name('run_id', run_id)}", check_name("marker", name))


def _rows_to_arrow(spec: TableSpec, run_id: str, rows: Sequence[BaseModel]) -> pa.Table:
    """Rows -> Arrow with the table's schema; every row must be the table's model and
    belong to the run whose partition it lands in."""
    if "run_id" not in spec.model.model_fields:
        raise TypeError(f"table {spec.name!r}: model {spec.model.__name__} has no run_id field to partition by")
    for index, row in enumerate(rows):
        if not isinstance(row, spec.model):
            raise TypeError(
                f"table {spec.name!r} takes {spec.model.__name__} rows; row {index} is {type(row).__name__}"
            )
        if row.run_id != run_id:
            raise ValueError(
                f"table {spec.name!r}: row {index} has run_id {row.run_id!r}, the part is for run {run_id!r}"
            )
    try:
        return rows_to_table(spec.model, rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise TypeError(f"table {spec.name!r}: rows do not fit its Arrow schema: {exc}") from exc


def _check_arrow(spec: TableSpec, run_id: str, data: pa.Table) -> None:
    import pyarrow.compute as pc

    schema = to_arrow_schema(spec.model)
    if not data.schema.equals(schema):
        raise TypeError(f"table {spec.name!r} needs the schema\n{schema}\nbut the Arrow table has\n{data.schema}")
    for field in schema:
        if not field.nullable and data.column(field.name).null_count:
            raise ValueError(f"table {spec.name!r}: column {field.name!r} is not nullable but holds nulls")
    if data.num_rows and not pc.all(pc.equal(data.column("run_id"), run_id)).as_py():
        raise ValueError(f"table {spec.name!r}: some rows have a run_id other than the part's run {run_id!r}")
