"""Process environment the engines need, set before Prefect or MLflow is imported.

Prefect keeps its home (ephemeral server database) beside a local store; analytics and
telemetry are off; the ephemeral server gets time to start on a fresh database and
records task runs in batches (``EPHEMERAL_RECORDER``). Two
ephemeral servers must not share one home, so a process holds its home's lock for its
lifetime, and a concurrent `ratchet` on the same store takes the first free slot
`<store>/prefect/slots/<n>` (kept, so the next concurrent run starts on a warm
database). A `PREFECT_HOME` or `PREFECT_API_URL` the user set is left alone."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path

from storage.uris import DEFAULT_STORE, STORE_FORMS, resolve_store  # noqa: F401 (the CLI's names)


EPHEMERAL_RECORDER = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_READ_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",
}
"""The ephemeral server's task-run recorder writes its events in batches, at least once a
second, instead of one transaction per event (Prefect's default batch of 1). Every
stage of a round is a task run with three events; one at a time they took about 1.1 of
the server's 1.6 s of CPU during a 3 s, 3-round run of 1 ms evaluations on two cores
(0.6 s batched), CPU the run itself needed. The server's shutdown flushes what is left
(with the default, the run's last task-run state was missing from its database after
the process exited). A real server's settings are its own."""


def prepare_environment(store_uri: str) -> None:
    prefect_home = (
        Path(store_uri) / "prefect" if not store_uri.startswith("s3://") else Path(DEFAULT_STORE).resolve() / "prefect"
    )
    if "PREFECT_HOME" not in os.environ and "PREFECT_API_URL" not in os.environ:
        prefect_home = free_home(prefect_home)
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
    if "PREFECT_API_URL" not in os.environ:
        # The ephemeral server is ours and dies with the run: when a run fails and exits,
        # its event recorder logs the cancelled flush of its last events as tracebacks,
        # which would bury the run's one-line error. A real server's logs are its own.
        defaults["PREFECT_SERVER_LOGGING_LEVEL"] = "CRITICAL"
        defaults.update(EPHEMERAL_RECORDER)
    for key, value in defaults.items():
        os.environ.setdefault(key, value)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    os.environ["RATCHET_STORE"] = store_uri


@contextmanager
def engine_settings():
    """Prefect settings for a flow run from this process. On the ephemeral server (no
    `PREFECT_API_URL` set) flow-run heartbeats are off: they exist so a server can mark
    a crashed run, and an ephemeral server dies with the run; Prefect's heartbeat thread
    also holds every flow run's exit for up to a second (it sleeps in 1 s steps), which
    is most of a cheap run's fixed cost. A real server keeps them."""
    from prefect.context import SettingsContext, get_settings_context

    if os.environ.get("PREFECT_API_URL"):
        yield
        return
    current = get_settings_context()
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PREFECT_")))
    key = (id(current.settings), environment)
    if key not in _QUIET:  # building Prefect's settings re-reads and validates every source (~0.1 s)
        _QUIET[key] = (current.settings, current.settings.copy_with_update(updates={"flows.heartbeat_frequency": None}))
    with SettingsContext(profile=current.profile, settings=_QUIET[key][1]):
        yield


_QUIET: dict = {}
"""(id of the settings, PREFECT_* environment) -> (those settings, kept so the id stays
theirs; the same settings with heartbeats off)."""


_HELD: list = []
"""Open lock files of the Prefect homes this process uses (held until it exits)."""


def free_home(home: Path, slots: int = 64) -> Path:
    """``home`` when no other live process holds it, else the first free slot under it."""
    for candidate in [home, *(home / "slots" / str(n) for n in range(slots))]:
        candidate.mkdir(parents=True, exist_ok=True)
        handle = open(candidate / ".ratchet-lock", "a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _HELD.append(handle)
        return candidate
    raise SystemExit(f"{slots + 1} ratchet processes already use Prefect homes under {home}; set PREFECT_API_URL "
                     "to a `prefect server start` for them all")
