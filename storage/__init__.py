"""Storage layer: Parquet table store (local or S3), blobs, DuckDB catalog, MLflow tracking.

``store`` and ``errors`` are light; ``catalog`` (DuckDB) and ``tracking`` (MLflow) are
imported only by the code that needs them.
"""

from storage.errors import TerminalError, TransientError, is_transient
from storage.store import TableStore, open_store

__all__ = ["TableStore", "TerminalError", "TransientError", "is_transient", "open_store"]
