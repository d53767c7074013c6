"""Find the store's unreadable parts, and move them aside so the rest stays usable.

``check_store`` reads every visible part of every table (or of one run) in full and
compares its schema with the table's Arrow schema: a truncated or corrupted file, a
file that is not Parquet, or a stray file with other columns is *damaged*.
``quarantine`` moves a damaged part out of ``tables/`` to

    quarantine/<table>/run_id=<run_id>/<name>         the part, as it was
    quarantine/<table>/run_id=<run_id>/<name>.json    why and when it was moved

Outside ``tables/`` no reader sees it (``has_part`` is false, the DuckDB views skip it),
so queries work again and resuming the run re-derives the part. ``record_damage``
appends a ``damaged`` status event to the run, so a finished run is resumed too.

``scan_footers`` is the cheap variant (footer and schema only) the catalog uses to name
the part that keeps a table's view from being created.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from schemas.arrow import to_arrow_schema
from schemas.rows import RunRow
from schemas.tables import TABLES
from storage import compaction
from storage import fs as storefs
from storage.errors import io_errors
from storage.store import TableStore, check_name

QUARANTINE = "quarantine"


@dataclass(frozen=True)
class Part:
    """One visible Parquet file of a table's run partition."""

    table: str
    run_id: str
    name: str
    path: str
    """filesystem path (``store.location.fs``)"""

    @property
    def stage(self) -> str:
        """The stage that wrote it: part names are ``<stage>-<key>.parquet``."""
        return self.name.split("-", 1)[0] if "-" in self.name else self.name.removesuffix(".parquet")

    def describe(self) -> str:
        return f"{self.table} part {self.name} of run {self.run_id}"


@dataclass(frozen=True)
class Damage:
    part: Part
    error: str


@dataclass(frozen=True)
class CheckResult:
    checked: int
    damaged: tuple[Damage, ...]

    @property
    def ok(self) -> bool:
        return not self.damaged

    def runs(self) -> list[str]:
        return sorted({d.part.run_id for d in self.damaged})


def list_parts(store: TableStore, run_id: str | None = None, tables: Iterable[str] | None = None) -> list[Part]:
    """Every visible part of ``tables`` (default: all), of one run or of every run."""
    if run_id is not None:
        check_name("run_id", run_id)
    parts = []
    for table in tables or TABLES:
        for path in store.part_files(table, run_id):
            directory, name = path.rsplit("/", 1)
            parts.append(Part(table, directory.rsplit("/", 1)[-1].removeprefix("run_id="), name, path))
    return parts


def check_part(store: TableStore, part: Part, *, full: bool = True) -> str | None:
    """Why ``part`` is damaged, or None when it reads with its table's schema. ``full``
    decodes every row group (and checks the rows' run_id); otherwise only the footer."""
    expected = to_arrow_schema(TABLES[part.table].model)
    try:
        with store.location.fs.open_input_file(part.path) as handle:
            parquet = pq.ParquetFile(handle)
            problem = schema_problem(parquet.schema_arrow, expected)
            if problem or not full:
                return problem
            for batch in parquet.iter_batches(batch_size=65_536):
                run_ids = batch.column("run_id")
                if run_ids.null_count or pc.all(pc.equal(run_ids, part.run_id)).as_py() is False:
                    return f"holds rows of another run than {part.run_id!r}"
    except (OSError, pa.ArrowException, ValueError) as exc:
        return _one_line(exc)
    return None


def schema_problem(actual: pa.Schema, expected: pa.Schema) -> str | None:
    """What differs between a part's schema and its table's, or None."""
    if actual.equals(expected, check_metadata=False):
        return None
    have = {f.name: f for f in actual}
    missing = [f.name for f in expected if f.name not in have]
    extra = [f.name for f in actual if f.name not in set(expected.names)]
    changed = [f"{f.name} is {have[f.name].type}, expected {f.type}" for f in expected
               if f.name in have and not have[f.name].type.equals(f.type)]
    reasons = ([f"missing columns {missing}"] if missing else []) + ([f"extra columns {extra}"] if extra else [])
    reasons += changed
    if not reasons:
        nullability = [f.name for f in expected if f.name in have and have[f.name].nullable != f.nullable]
        reasons = [f"nullability differs for {nullability}"] if nullability else ["column order differs"]
    return "schema differs from the table's: " + "; ".join(reasons)


def check_store(store: TableStore, run_id: str | None = None, tables: Iterable[str] | None = None) -> CheckResult:
    """Read every part (of one run, of ``tables``) in full; the damaged ones with why."""
    with io_errors(f"listing the parts of {store.root_uri}"):
        parts = list_parts(store, run_id, tables)
    damaged = [Damage(p, error) for p in parts if (error := check_part(store, p)) is not None]
    return CheckResult(checked=len(parts), damaged=tuple(damaged))


def scan_footers(store: TableStore, table: str) -> list[Damage]:
    """Parts of ``table`` whose footer or schema is unreadable (cheap: no row data)."""
    damaged = []
    for part in list_parts(store, tables=[table]):
        error = check_part(store, part, full=False)
        if error is not None:
            damaged.append(Damage(part, error))
    return damaged


def quarantine_path(store: TableStore, part: Part) -> str:
    return store.location.path(QUARANTINE, part.table, f"run_id={part.run_id}", part.name)


def quarantine(store: TableStore, damage: Damage, now: datetime | None = None) -> str:
    """Move a damaged part under ``quarantine/`` (with a JSON note next to it); returns
    its new URI. Local stores rename (atomic); S3 copies, then deletes the original, so
    readers see the part in ``tables/`` until it is gone. A part quarantined before
    under the same name keeps its place: the newer one gets a timestamp suffix."""
    now = now or datetime.now(UTC)
    loc, part = store.location, damage.part
    target = quarantine_path(store, part)
    with io_errors(f"quarantining {part.describe()}"):
        if storefs.exists(loc, target):
            target = target.removesuffix(".parquet") + f".{now:%Y%m%dT%H%M%S%f}.parquet"
        if loc.is_local:
            loc.fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
        loc.fs.move(part.path, target)
        if part.stage == compaction.MERGED_STAGE:
            _move_manifest(store, part, target.rsplit("/", 1)[0])
        note = {
            "table": part.table, "run_id": part.run_id, "stage": part.stage, "part": part.name,
            "from": loc.uri_of(part.path), "error": damage.error, "quarantined_at": now.isoformat(),
        }
        storefs.publish(loc, f"{target}.json", json.dumps(note, indent=1).encode())
    return loc.uri_of(target)


def _move_manifest(store: TableStore, part: Part, target_dir: str) -> None:
    """A compacted part takes its manifest along: without the merged file the manifest
    is dead anyway (``has_part`` is false for its parts), and it says what was inside."""
    loc = store.location
    digest = part.name.removeprefix(f"{compaction.MERGED_STAGE}-").removesuffix(".parquet")
    manifest = f"{part.path.rsplit('/', 1)[0]}/_manifest-{digest}.json"
    if loc.fs.get_file_info(manifest).type == pafs.FileType.File:
        loc.fs.move(manifest, f"{target_dir}/_manifest-{digest}.json")


def record_damage(store: TableStore, run_id: str, damaged: Sequence[Damage], now: datetime | None = None) -> RunRow | None:
    """Append a ``damaged`` status event to the run (a copy of its latest event), naming
    the quarantined parts, so ``ratchet resume`` re-runs it even when it had finished.
    None when the run has no status event left to copy."""
    now = now or datetime.now(UTC)
    events = store.read_rows("runs", run_id)
    if not events:
        return None
    latest = max(events, key=lambda r: (r.event_at, r.status != "running"))
    names = ", ".join(f"{d.part.table}/{d.part.name}" for d in damaged)
    event = latest.model_copy(update={
        "status": "damaged", "event_at": now,
        "error": f"quarantined unreadable parts: {names}; `ratchet resume {run_id}` re-derives them",
    })
    event = RunRow.model_validate(event.model_dump())
    store.write_part("runs", run_id, "status", f"damaged-{now:%Y%m%dT%H%M%S%f}", [event])
    return event


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
