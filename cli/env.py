"""Process environment the engines need, set before Prefect or MLflow is imported.

Prefect keeps its home (ephemeral server database) beside a local store; analytics and
telemetry are off; the ephemeral server gets time to start on a fresh database."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STORE = "./.ratchet"


def resolve_store(uri: str | None) -> str:
    """--store, else RATCHET_STORE, else ./.ratchet; local paths made absolute so every
    worker process finds the same store."""
    chosen = uri or os.environ.get("RATCHET_STORE") or DEFAULT_STORE
    if chosen.startswith("s3://"):
        return chosen
    if "://" in chosen:
        raise ValueError(f"store URI {chosen!r} must be a local path or s3://bucket/prefix")
    return str(Path(chosen).expanduser().resolve())


def prepare_environment(store_uri: str) -> None:
    prefect_home = (
        Path(store_uri) / "prefect" if not store_uri.startswith("s3://") else Path(DEFAULT_STORE).resolve() / "prefect"
    )
    defaults = {
        "PREFECT_HOME": str(prefect_home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "MLFLOW_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW": "ignore",
        "GIT_PYTHON_REFRESH": "quiet",
    }
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ["RATCHET_STORE"] = store_uri
