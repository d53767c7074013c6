"""Process environment the engines need, set before Prefect or MLflow is imported.

Prefect keeps its home (ephemeral server database) beside a local store; analytics and
telemetry are off; the ephemeral server gets time to start on a fresh database."""

from __future__ import annotations

import os
from pathlib import Path

from storage.uris import DEFAULT_STORE, STORE_FORMS, resolve_store  # noqa: F401 (the CLI's names)


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
