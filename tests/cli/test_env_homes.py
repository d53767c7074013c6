"""Concurrent `ratchet` processes on one store get Prefect homes of their own: the second
takes a slot while the first holds the store's home; a home the user set is kept."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import os, sys, time
from cli.env import prepare_environment
prepare_environment(sys.argv[1])
print(os.environ["PREFECT_HOME"], flush=True)
time.sleep(float(sys.argv[2]))
"""


def start(store: Path, hold_s: float, **env) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PREFECT_API_URL")}
    return subprocess.Popen([sys.executable, "-c", HOLD, str(store), str(hold_s)], cwd=ROOT, text=True,
                            env={**clean, "PYTHONPATH": str(ROOT), **env}, stdout=subprocess.PIPE)


def test_a_second_process_takes_a_slot_and_a_later_one_the_home_again(tmp_path):
    first = start(tmp_path, 5)
    assert first.stdout.readline().strip() == str(tmp_path / "prefect")
    second = start(tmp_path, 0)
    assert second.stdout.readline().strip() == str(tmp_path / "prefect" / "slots" / "0")
    second.wait(timeout=60)
    first.wait(timeout=60)
    third = start(tmp_path, 0)
    assert third.stdout.readline().strip() == str(tmp_path / "prefect")  # the lock died with its process
    third.wait(timeout=60)


def test_a_home_the_user_set_is_left_alone(tmp_path):
    first = start(tmp_path, 3)
    assert first.stdout.readline().strip() == str(tmp_path / "prefect")
    mine = start(tmp_path, 0, PREFECT_HOME=str(tmp_path / "mine"))
    assert mine.stdout.readline().strip() == str(tmp_path / "mine")
    mine.wait(timeout=60)
    first.wait(timeout=60)


@pytest.mark.slow
@pytest.mark.integration
def test_two_runs_at_once_on_one_store_both_finish(tmp_path):
    clean = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PREFECT_API_URL")}
    env = {**clean, "PYTHONPATH": str(ROOT), "RATCHET_STORE": str(tmp_path / "store")}
    runs = [subprocess.Popen([sys.executable, "-m", "cli.main", "run", "evolve", "--suite", "spin", "--budget", "2",
                              "--seed", str(seed), "--no-tracking"], cwd=ROOT, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for seed in (0, 1)]
    outputs = [run.communicate(timeout=600)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    listed = subprocess.run([sys.executable, "-m", "cli.main", "sql", "SELECT status, count(*) AS n FROM runs_current "
                             "GROUP BY status", "--format", "json"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert '"status": "finished"' in listed.stdout and '"n": 2' in listed.stdout, listed.stdout
