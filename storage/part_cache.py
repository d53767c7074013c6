"""Parts this process wrote to a local store, kept in memory for the stage that reads them next.

A round's stages read back what the stage before them wrote a moment earlier (score reads
execute's parts, register reads score's); decoding those Parquet files again costs about
3 ms a part. A part published here is remembered with the file's identity after the
rename (inode, size, mtime in ns); a read is served from memory only while the file on
disk still has that identity, so a part replaced by a retry, by another process or by
compaction (which removes it) is read from disk as before. The cached table is the one
that was encoded, with the table's exact schema, so a hit returns the same rows a read
would. A cache only ever saves time: a miss costs the read it would have cost anyway.

Bounded: a part over ``MAX_PART_BYTES`` is never kept, and the least recently used parts
go first once ``MAX_BYTES`` are held. Local stores only (an S3 object has no inode)."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict

import pyarrow as pa

MAX_PART_BYTES = 8 << 20
MAX_BYTES = 64 << 20

_lock = threading.Lock()
_entries: OrderedDict[str, tuple[tuple[int, int, int], pa.Table]] = OrderedDict()
_held = 0


def _identity(path: str) -> tuple[int, int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_size, status.st_mtime_ns


def remember(path: str, table: pa.Table) -> None:
    """Keep ``table`` as the content of the part just published at ``path``."""
    global _held
    identity = _identity(path)
    if identity is None or table.nbytes > MAX_PART_BYTES:
        forget(path)
        return
    with _lock:
        _drop(path)
        _entries[path] = (identity, table)
        _held += table.nbytes
        while _held > MAX_BYTES and _entries:
            _drop(next(iter(_entries)))


def recall(path: str) -> pa.Table | None:
    """The remembered content of ``path`` while the file is still the one written; else None."""
    with _lock:
        entry = _entries.get(path)
    if entry is None:
        return None
    if _identity(path) != entry[0]:
        forget(path)
        return None
    with _lock:
        if path in _entries:
            _entries.move_to_end(path)
    return entry[1]


def recall_all(paths: list[str]) -> list[pa.Table] | None:
    """Every path's remembered content, in order, or None when any one is not a hit."""
    tables = []
    for path in paths:
        table = recall(path)
        if table is None:
            return None
        tables.append(table)
    return tables


def forget(path: str) -> None:
    with _lock:
        _drop(path)


def _drop(path: str) -> None:
    global _held
    entry = _entries.pop(path, None)
    if entry is not None:
        _held -= entry[1].nbytes
