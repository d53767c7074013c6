"""Access to the reference data in ``../shared/data`` (data nobody on this project
wrote). Suites pin each file they read by sha256, so a changed file stops the suite
instead of silently changing every score computed from it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[1]


class ReferenceDataError(RuntimeError):
    """A reference data file is missing, malformed or not the file the suite pinned."""


def shared_data_dir() -> Path:
    """The shared data folder: ``$RATCHET_SHARED_DATA`` if set (CI, other checkouts),
    else ``<repo root>/../shared/data`` where every developer machine has it."""
    configured = os.environ.get("RATCHET_SHARED_DATA")
    return Path(configured) if configured else _REPO_ROOT.parent / "shared" / "data"


def read_verified(relative_path: str, sha256: str) -> bytes:
    """Bytes of ``relative_path`` under the shared data folder, after checking that
    their sha256 is the one the caller recorded."""
    path = shared_data_dir() / relative_path
    if not path.is_file():
        raise ReferenceDataError(
            f"reference data file {path} does not exist; set RATCHET_SHARED_DATA to the "
            "folder that holds the shared data"
        )
    data = path.read_bytes()
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise ReferenceDataError(
            f"reference data file {path} has sha256 {actual}, but the suite recorded "
            f"{sha256}; the file changed, so scores computed from it would not be "
            "comparable (see ../shared/README.md for the published hashes)"
        )
    return data
