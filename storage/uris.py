"""Where a store lives: the one rule the CLI and the flows (a deployment run, which gets
no --store) both use to resolve and check a store URI."""

from __future__ import annotations

import os
import re
from pathlib import Path

DEFAULT_STORE = "./.ratchet"


STORE_FORMS = "a local folder (./store, /data/ratchet) or s3://BUCKET[/PREFIX]"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def resolve_store(uri: str | None, must_exist: bool = False) -> str:
    """--store, else RATCHET_STORE, else ./.ratchet; local paths made absolute so every
    worker process finds the same store. Refuses what cannot be a store (a file, a folder
    it cannot write, another URL scheme, a malformed s3 URI) with the accepted forms;
    with ``must_exist`` (the read-only commands) a local store must already exist."""
    chosen = uri or os.environ.get("RATCHET_STORE") or DEFAULT_STORE
    if chosen.startswith("s3://"):
        bucket = chosen.removeprefix("s3://").split("/", 1)[0]
        if not _BUCKET.fullmatch(bucket):
            raise ValueError(f"store URI {chosen!r} has no valid bucket name; the store must be {STORE_FORMS}")
        return chosen.rstrip("/")
    if "://" in chosen or re.match(r"^([A-Za-z][A-Za-z0-9+.-]*:/|s3:)", chosen, re.IGNORECASE):
        raise ValueError(f"store URI {chosen!r} is not a store; the store must be {STORE_FORMS}")
    path = Path(chosen).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ValueError(f"store {str(path)!r} is a file, not a folder; the store must be {STORE_FORMS}")
    if must_exist and not path.is_dir():
        raise ValueError(f"no store at {str(path)!r}; start one with `ratchet run LOOP --store {chosen}` "
                         "or pass the --store (or RATCHET_STORE) that holds your runs")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"store {str(path)!r} cannot be created ({exc.strerror}); pick a folder you can write") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"store {str(path)!r} is not writable by you; pick a folder you can write")
    return str(path)
