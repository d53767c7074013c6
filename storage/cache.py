"""This user's local cache files, outside any store (readers never write into a store).

Standard library only, so the light paths (``ratchet sql`` over a cached view layout)
can use it without loading pyarrow. A cache is only ever a shortcut: a missing,
unreadable or stale file costs time, never rows."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

CACHE_DAYS = 30
"""A store's cache file untouched this long (a store long gone) is removed."""


def cache_file(kind: str, uri: str) -> Path:
    """This user's local cache file of ``kind`` for the store at ``uri``, outside the
    store (readers never write into a store): ``$RATCHET_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/ratchet``, else ``~/.cache/ratchet`` (the temp folder without a home)."""
    base = os.environ.get("RATCHET_CACHE_DIR")
    if not base:
        try:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ratchet"
        except (KeyError, RuntimeError):  # no home directory
            base = Path(tempfile.gettempdir()) / f"ratchet-cache-{os.getuid()}"
    return Path(base) / f"{kind}-{hashlib.sha256(uri.encode()).hexdigest()[:16]}.json"


def read_cache(path: Path) -> dict:
    """A cache file's JSON object; empty when it is missing or unreadable (a cache is
    only ever a shortcut)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_cache(path: Path, data: dict) -> None:
    """Replace a cache file atomically, and remove the files of its kind untouched for
    ``CACHE_DAYS``; a cache that cannot be written is skipped."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(data, separators=(",", ":")))
        os.replace(temp, path)
        cutoff = time.time() - CACHE_DAYS * 86400
        for old in path.parent.glob(f"{path.name.split('-', 1)[0]}-*.json"):
            if old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
