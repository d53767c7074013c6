"""`ratchet run evolve --proposer grammar` on bin_packing: every child is the grammar's."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app

pytestmark = [pytest.mark.integration]
runner = CliRunner()


def test_evolve_runs_with_the_grammar_proposer(prefect_server, tmp_path):
    store = str(tmp_path / "store")
    result = runner.invoke(app, ["run", "evolve", "--suite", "bin_packing", "--proposer", "grammar", "--budget", "4",
                                 "--param", "datasets=or1", "--store", store, "--no-tracking"])
    assert result.exit_code == 0, result.output
    rows = runner.invoke(app, ["sql", "SELECT proposer, operator, artifact_uri FROM candidates WHERE round > 0",
                               "--store", store, "--format", "json"])
    assert rows.exit_code == 0, rows.output
    children = json.loads(rows.output)
    assert len(children) == 4
    assert {c["proposer"] for c in children} == {"grammar"}
    assert {c["operator"] for c in children} <= {"grammar_grow", "grammar_wrap", "grammar_constant",
                                                 "grammar_crossover"}
