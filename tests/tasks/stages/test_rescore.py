"""`ratchet rescore`: a real run's stored outputs scored again by a changed scorer, run
from a copy of the project whose spin scorer doubles every value (a ruler change with a
hand-computable effect); no candidate re-runs, the gate's rows stay, a second call adds
nothing, and loops whose scores are not verdicts on outputs are refused in one line."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from flows.evolve import evolve
from flows.harness_or_model import harness_or_model
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


@pytest.fixture(scope="module")
def store_uri(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("rescore") / "store")
    evolve(config=RunConfig(loop="evolve", suite="spin", budget=3, seed=0, workers=1, tracking=False,
                            evolve=EvolveConfig(children_per_round=2, islands=1)), store_uri=uri, run_id="evo")
    return uri


@pytest.fixture(scope="module")
def changed_project(tmp_path_factory):
    """The project's files with spin's scorer changed to report twice the value."""
    copy = tmp_path_factory.mktemp("project") / "ratchet"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", ".pytest*"))
    spin = copy / "suites" / "spin.py"
    source = spin.read_text()
    assert 'return Verdict(True, {"value": float(value)})' in source
    spin.write_text(source.replace('return Verdict(True, {"value": float(value)})',
                                   'return Verdict(True, {"value": 2 * float(value)})'))
    return copy


def rescore_with(project: Path, store_uri: str, run_id: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(project), "RATCHET_STORE": store_uri}
    return subprocess.run([sys.executable, "-m", "cli.main", "rescore", run_id], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_installed_scorer_has_nothing_to_rescore(store_uri):
    result = runner.invoke(app, ["rescore", "evo", "--store", store_uri])
    assert result.exit_code == 0, result.output
    assert "scored by the installed scorer already" in result.output


def test_only_the_installed_scorer_version_can_be_asked_for(store_uri):
    result = runner.invoke(app, ["rescore", "evo", "--scorer-version", "0123abcd", "--store", store_uri])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "scorer version 0123abcd is not installed; the installed spin scorer is" in result.output


def test_a_changed_scorer_rescores_stored_outputs_beside_the_old_rows(store_uri, changed_project):
    store = open_store(store_uri)
    before = store.read_rows("scores", "evo")
    decisions = store.read_rows("gate_decisions", "evo")
    executions = store.read_rows("executions", "evo")
    result = rescore_with(changed_project, store_uri, "evo")
    assert result.returncode == 0, result.stdout + result.stderr
    after = store.read_rows("scores", "evo")
    (anchored,) = {r.scorer_version for r in before}
    new = [r for r in after if r.scorer_version != anchored]
    assert len(new) == len(before) and {r.execution_id for r in new} == {r.execution_id for r in before}
    old = {(r.execution_id, r.metric): r for r in before}
    for row in new:  # valid outputs score twice their value; invalid ones keep the floor
        was = old[(row.execution_id, row.metric)]
        assert row.value == (2 * was.value if was.valid else was.value) and row.valid == was.valid
    assert store.read_rows("gate_decisions", "evo") == decisions  # what was admitted stays
    assert store.read_rows("executions", "evo") == executions  # nothing re-ran
    changed = sum(1 for r in before if r.valid and r.value != 0)
    assert f"{changed} executions changed their primary score" in result.stdout
    again = rescore_with(changed_project, store_uri, "evo")
    assert again.returncode == 0 and len(store.read_rows("scores", "evo")) == len(after)


def test_protocol_and_unknown_runs_are_refused_in_one_line(store_uri, prefect_server):
    harness_or_model(config=RunConfig(loop="harness_or_model", suite="toolsim", budget=1, tracking=False,
                                      suite_params={"instances_per_template": 1}), store_uri=store_uri, run_id="hom")
    result = runner.invoke(app, ["rescore", "hom", "--store", store_uri])
    assert result.exit_code != 0
    assert "harness_or_model runs cannot be rescored" in result.output and "Traceback" not in result.output
    missing = runner.invoke(app, ["rescore", "nope", "--store", store_uri])
    assert missing.exit_code != 0 and "no run 'nope'" in missing.output
