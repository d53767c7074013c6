"""Merge a finished run's small parts into one part per table, crash-safely.

Readers (``TableStore.read`` and the DuckDB views) see every file in a run partition
whose name does not start with ``_`` or ``.``. Compacting ``inputs`` into one part:

1. write the merged rows to ``_compacted-<d>.parquet`` (hidden; ``d`` hashes the
   input names, so a re-run after a crash rewrites the same file);
2. write ``_manifest-<d>.json``: the input file names and, for every original part, its
   row range in the merged file;
3. delete the inputs;
4. rename ``_compacted-<d>.parquet`` to ``compacted-<d>.parquet`` (now visible);
5. delete the manifests of inputs that were themselves compacted parts.

Until step 3 readers see exactly the old parts; from step 4 on, exactly the merged
part. A reader never sees a row twice; while steps 3-4 run, or after a crash between
them until ``compact`` runs again, it sees fewer rows. Re-running ``compact`` rolls
every pending manifest forward first. The manifest stays, so ``has_part``/``read_part``
find an original part inside the merged one, and a retried stage cannot re-add a
merged part (``write_part`` refuses).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from schemas.tables import TABLES, TableSpec
from storage import fs as storefs
from storage.errors import io_errors

if TYPE_CHECKING:
    from storage.store import TableStore

MERGED_STAGE = "compacted"
_MANIFEST_PREFIX = "_manifest-"


@dataclass(frozen=True)
class Manifest:
    """Which files one compaction merged, and where each original part's rows went."""

    digest: str
    inputs: tuple[str, ...]
    parts: dict[str, tuple[int, int]]
    """original part file name -> (first row, row count) in the merged file"""

    @property
    def merged_name(self) -> str:
        return f"{MERGED_STAGE}-{self.digest}.parquet"

    @property
    def pending_name(self) -> str:
        return f"_{self.merged_name}"

    @property
    def manifest_name(self) -> str:
        return f"{_MANIFEST_PREFIX}{self.digest}.json"

    def to_json(self) -> bytes:
        return json.dumps({"inputs": list(self.inputs), "parts": self.parts}, indent=1).encode()

    @classmethod
    def from_json(cls, digest: str, data: bytes) -> Manifest:
        doc = json.loads(data)
        parts = {name: (int(first), int(count)) for name, (first, count) in doc["parts"].items()}
        return cls(digest=digest, inputs=tuple(doc["inputs"]), parts=parts)


def _listing(loc: storefs.Location, directory: str) -> tuple[set[str], list[Manifest]]:
    """File names in a run partition, and its compaction manifests."""
    names = {path.rsplit("/", 1)[-1] for path in storefs.list_files(loc, directory, recursive=False)}
    manifests = [
        Manifest.from_json(name[len(_MANIFEST_PREFIX) : -len(".json")], storefs.read_bytes(loc, f"{directory}/{name}"))
        for name in sorted(names)
        if name.startswith(_MANIFEST_PREFIX) and name.endswith(".json")
    ]
    return names, manifests


def _merged_file(manifest: Manifest, names: set[str]) -> str | None:
    """The file holding a manifest's rows: the merged part, or the pending one before
    step 4; None for a manifest whose merged part a later compaction consumed."""
    for candidate in (manifest.merged_name, manifest.pending_name):
        if candidate in names:
            return candidate
    return None


def find_part(loc: storefs.Location, directory: str, name: str) -> Manifest | None:
    """The live manifest that merged part ``name``, if any."""
    names, manifests = _listing(loc, directory)
    for manifest in manifests:
        if name in manifest.parts and _merged_file(manifest, names):
            return manifest
    return None


def read_compacted_part(store: TableStore, spec: TableSpec, directory: str, name: str) -> pa.Table | None:
    """The rows of original part ``name`` sliced out of the part that merged it."""
    names, manifests = _listing(store.location, directory)
    for manifest in manifests:
        merged = _merged_file(manifest, names)
        if name in manifest.parts and merged:
            first, count = manifest.parts[name]
            return store.read_files(spec, [f"{directory}/{merged}"]).slice(first, count)
    return None


def compact_run(store: TableStore, run_id: str) -> dict[str, tuple[int, int]]:
    """Compact every table of a run; ``{table: (parts_before, parts_after)}``."""
    result: dict[str, tuple[int, int]] = {}
    for table, spec in TABLES.items():
        directory = store.partition_dir(table, run_id)
        with io_errors(f"compacting table {table!r}, run {run_id!r}"):
            recover(store.location, directory)
            inputs = store.part_files(table, run_id)
            if len(inputs) > 1:
                _merge(store, spec, directory, inputs)
            if inputs:
                result[table] = (len(inputs), len(store.part_files(table, run_id)))
    return result


def recover(loc: storefs.Location, directory: str) -> None:
    """Finish what a crashed compaction started: roll pending manifests forward, drop
    manifests of consumed parts and merged files that never got a manifest. Also drop
    temp files that crashed writers left (nobody writes to a finished run)."""
    names, manifests = _listing(loc, directory)
    with_manifest = set()
    for manifest in manifests:
        with_manifest.add(manifest.pending_name)
        merged = _merged_file(manifest, names)
        if merged == manifest.pending_name:
            _finish(loc, directory, manifest)
        elif merged is None:
            storefs.delete(loc, f"{directory}/{manifest.manifest_name}")
        else:
            storefs.delete(loc, f"{directory}/{manifest.pending_name}")
    for name in names:
        orphan = name.startswith(f"_{MERGED_STAGE}-") and name not in with_manifest
        if orphan or (name.startswith(".") and name.endswith(".tmp")):
            storefs.delete(loc, f"{directory}/{name}")


def _merge(store: TableStore, spec: TableSpec, directory: str, inputs: list[str]) -> None:
    loc = store.location
    names = [path.rsplit("/", 1)[-1] for path in inputs]
    _, manifests = _listing(loc, directory)
    consumed = {manifest.merged_name: manifest for manifest in manifests}
    tables: list[pa.Table] = []
    parts: dict[str, tuple[int, int]] = {}
    offset = 0
    for path, name in zip(inputs, names):
        data = store.read_files(spec, [path])
        if name in consumed:
            parts.update({part: (offset + first, count) for part, (first, count) in consumed[name].parts.items()})
        else:
            parts[name] = (offset, data.num_rows)
        offset += data.num_rows
        tables.append(data)
    digest = hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]
    manifest = Manifest(digest=digest, inputs=tuple(names), parts=parts)
    _write_pending(loc, directory, manifest, pa.concat_tables(tables))
    storefs.publish(loc, f"{directory}/{manifest.manifest_name}", manifest.to_json())
    _finish(loc, directory, manifest)


def _write_pending(loc: storefs.Location, directory: str, manifest: Manifest, data: pa.Table) -> None:
    """Step 1: the merged rows under a name no reader looks at."""
    import pyarrow.parquet as pq  # only compaction writes: opening a store does not load it

    sink = pa.BufferOutputStream()
    pq.write_table(data, sink, compression="zstd")
    storefs.publish(loc, f"{directory}/{manifest.pending_name}", sink.getvalue())


def _finish(loc: storefs.Location, directory: str, manifest: Manifest) -> None:
    """Steps 3-5, each idempotent so a crashed run can be rolled forward."""
    _delete_inputs(loc, directory, manifest)
    _promote(loc, directory, manifest)
    for name in manifest.inputs:
        if name.startswith(f"{MERGED_STAGE}-"):
            storefs.delete(loc, f"{directory}/{_MANIFEST_PREFIX}{name[len(MERGED_STAGE) + 1 : -len('.parquet')]}.json")


def _delete_inputs(loc: storefs.Location, directory: str, manifest: Manifest) -> None:
    for name in manifest.inputs:
        storefs.delete(loc, f"{directory}/{name}")


def _promote(loc: storefs.Location, directory: str, manifest: Manifest) -> None:
    loc.fs.move(f"{directory}/{manifest.pending_name}", f"{directory}/{manifest.merged_name}")
