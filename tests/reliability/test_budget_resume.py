"""A capped run SIGKILLed in the execute stage of a round it had begun (its first
candidate published), then `ratchet resume`d: the round it had admitted is finished (the
spend already counts that candidate's executions, which alone would stop it), and every
table matches the capped run left alone."""

import importlib.util
import signal
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.integration]
KIT = Path(__file__).resolve().parents[2] / "benchmarks" / "fault_kit.py"
ARGS = ["run", "evolve", "--suite", "circle_packing", "--budget", "6", "--seed", "5", "--workers", "2",
        "--set", "evolve.children_per_round=2", "--set", "evolve.islands=1", "--no-tracking", "--max-evaluations", "4"]
"""The seed's 3 evaluations admit round 1; round 1's stop the run before round 2."""


@pytest.fixture(scope="module")
def kit():
    spec = importlib.util.spec_from_file_location("benchmark_fault_kit_budget_resume", KIT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_a_killed_capped_run_finishes_the_round_it_began(kit, tmp_path):
    env = {"PREFECT_HOME": str(tmp_path / "prefect")}
    alone = str(tmp_path / "alone")
    assert kit.ratchet(ARGS, {**env, "RATCHET_STORE": alone}, tmp_path / "alone.log") == 0
    (reference_run,) = kit.run_ids(alone)
    killed = str(tmp_path / "killed")
    code = kit.ratchet(ARGS, {**env, "RATCHET_STORE": killed, "RATCHET_KILL_AT": "execute:r0001"}, tmp_path / "killed.log")
    assert code == -signal.SIGKILL
    (run_id,) = kit.run_ids(killed)
    assert kit.latest_status(killed, run_id)[0] == "running"
    assert kit.ratchet(["resume", run_id], {**env, "RATCHET_STORE": killed}, tmp_path / "resume.log") == 0
    assert kit.latest_status(killed, run_id)[0] == "budget_exhausted"
    assert kit.differences(kit.snapshot(alone, reference_run), kit.snapshot(killed, run_id)) == {}
