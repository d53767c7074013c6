"""Test-wide environment: Prefect and MLflow quiet and local, set before either is
imported; one Prefect test server per session for the flow tests."""

import os
import tempfile

_HOME = tempfile.mkdtemp(prefix="ratchet-test-prefect-")
for _key, _value in {
    "PREFECT_HOME": _HOME,
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "OMP_NUM_THREADS": "1",
    "RATCHET_CACHE_DIR": os.path.join(_HOME, "cache"),  # the catalog's view-layout cache, not ~/.cache
}.items():
    os.environ.setdefault(_key, _value)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def prefect_server():
    """A real Prefect server (temporary database) for every flow test of the session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
