"""`engine_settings`: flow-run heartbeats are off on the ephemeral server (nothing
watches them, and Prefect's heartbeat thread holds each flow run's exit for up to a
second) and left as they are when a real server is set."""

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from prefect import flow
from prefect.settings import get_current_settings

from cli.env import EPHEMERAL_RECORDER, engine_settings


def test_heartbeats_are_off_without_a_server_and_kept_with_one(monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    default = get_current_settings().flows.heartbeat_frequency
    with engine_settings():
        assert get_current_settings().flows.heartbeat_frequency is None
    assert get_current_settings().flows.heartbeat_frequency == default == 180
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:4200/api")
    with engine_settings():
        assert get_current_settings().flows.heartbeat_frequency == 180


@flow(name="empty")
def empty() -> int:
    return 1


def test_an_empty_flow_run_no_longer_waits_for_the_heartbeat_thread(monkeypatch):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    empty()  # the ephemeral server's start is not part of the measurement

    def best_of(runs: int) -> float:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            assert empty() == 1
            times.append(time.perf_counter() - start)
        return min(times)

    with engine_settings():
        without = best_of(3)
    with_heartbeat = best_of(3)
    # the heartbeat thread sleeps in whole seconds, so a flow run waits on its join for
    # the rest of the current second; without it an empty run takes well under 0.5 s
    assert without < 0.5
    assert without < with_heartbeat, (without, with_heartbeat)
    print(f"empty flow run: {without:.3f} s without heartbeats, {with_heartbeat:.3f} s with")


def prepared(store: Path, names: tuple[str, ...], **extra: str) -> str:
    """What `prepare_environment` leaves in ``names`` (space-separated), run in a fresh
    process whose environment has none of them, nor PREFECT_API_URL, beyond ``extra``."""
    probe = ("import os, sys; from cli.env import prepare_environment; prepare_environment(sys.argv[1]); "
             f"print(*(os.environ.get(name) for name in {names!r}))")
    base = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL" and k not in names}
    done = subprocess.run([sys.executable, "-c", probe, str(store)], env={**base, **extra},
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_ephemeral_servers_shutdown_noise_is_silenced_and_a_real_servers_logs_are_left_alone(tmp_path):
    names = ("PREFECT_SERVER_LOGGING_LEVEL",)
    assert prepared(tmp_path / "store", names) == "CRITICAL"
    assert prepared(tmp_path / "store", names, PREFECT_API_URL="http://127.0.0.1:4200/api") == "None"
    assert prepared(tmp_path / "store", names, PREFECT_SERVER_LOGGING_LEVEL="DEBUG") == "DEBUG"  # the user's stays


def test_the_ephemeral_servers_task_run_recorder_batches_and_a_real_servers_is_left_alone(tmp_path):
    names = tuple(EPHEMERAL_RECORDER)
    assert prepared(tmp_path / "store", names) == "100 100 1"
    assert prepared(tmp_path / "store", names, PREFECT_API_URL="http://127.0.0.1:4200/api") == "None None None"
    user = {names[0]: "7"}  # what the user set stays
    assert prepared(tmp_path / "store", names, **user) == "7 100 1"


@pytest.mark.integration
def test_every_task_run_of_a_process_that_exits_is_in_the_ephemeral_servers_database(tmp_path):
    """The batched recorder's last batch is written when the server shuts down with the
    process: all three task runs are there, completed."""
    script = (
        "import sys\n"
        "from cli.env import engine_settings, prepare_environment\n"
        "prepare_environment(sys.argv[1])\n"
        "from prefect import flow, task\n"
        "@task\n"
        "def step(i): return i\n"
        "@flow(name='three-steps')\n"
        "def three(): return [step(i) for i in range(3)]\n"
        "with engine_settings(): three()\n"
    )
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "PREFECT_HOME") and not k.startswith("PREFECT_SERVER_SERVICES")}
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "store")], env=env, check=True,
                   capture_output=True, timeout=300)
    with closing(sqlite3.connect(tmp_path / "store" / "prefect" / "prefect.db")) as database:
        states = database.execute("select state_type from task_run").fetchall()
    assert states == [("COMPLETED",)] * 3
