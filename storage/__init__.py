"""Storage layer: Parquet table store (local or S3), blobs, DuckDB catalog, MLflow tracking.

The package itself imports nothing: ``TableStore``, ``open_store`` and the error types
load on first use, so the light modules (``uris``, ``cache``, ``sql_guard``) cost no
pyarrow. ``catalog`` (DuckDB) and ``tracking`` (MLflow) are imported only by the code
that needs them.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {"TableStore": "storage.store", "open_store": "storage.store", "TerminalError": "storage.errors",
            "TransientError": "storage.errors", "is_transient": "storage.errors"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'storage' has no attribute {name!r}")
