"""`ratchet run evolve --proposer grammar` on bin_packing (expression grammar) and
circle_packing (structure grammar): every child is the grammar's."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app

pytestmark = [pytest.mark.integration]
runner = CliRunner()

BIN_OPERATORS = {"grammar_grow", "grammar_wrap", "grammar_constant", "grammar_crossover"}
CIRCLE_OPERATORS = {"circle_layout", "circle_counts", "circle_polish", "circle_constant", "circle_seed",
                    "circle_crossover"}


@pytest.mark.parametrize("suite, params, operators", [
    ("bin_packing", ["--param", "datasets=or1"], BIN_OPERATORS),
    ("circle_packing", [], CIRCLE_OPERATORS),
])
def test_evolve_runs_with_the_grammar_proposer(prefect_server, tmp_path, suite, params, operators):
    store = str(tmp_path / "store")
    result = runner.invoke(app, ["run", "evolve", "--suite", suite, "--proposer", "grammar", "--budget", "4",
                                 *params, "--store", store, "--no-tracking"])
    assert result.exit_code == 0, result.output
    rows = runner.invoke(app, ["sql", "SELECT proposer, operator, artifact_uri FROM candidates WHERE round > 0",
                               "--store", store, "--format", "json"])
    assert rows.exit_code == 0, rows.output
    children = json.loads(rows.output)
    assert len(children) == 4
    assert {c["proposer"] for c in children} == {"grammar"}
    assert {c["operator"] for c in children} <= operators
