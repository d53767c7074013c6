"""`ratchet run evolve --proposer grammar` on bin_packing (expression grammar) and
circle_packing (structure grammar): every child is the grammar's."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app

pytestmark = [pytest.mark.integration]
runner = CliRunner()

BIN_OPERATORS = {"grammar_grow", "grammar_wrap", "grammar_constant", "grammar_crossover", "grammar_tpe"}
CIRCLE_OPERATORS = {"circle_layout", "circle_counts", "circle_polish", "circle_constant", "circle_seed",
                    "circle_crossover", "circle_tpe"}


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


def test_tpe_children_of_a_run_model_its_own_scored_programs(prefect_server, tmp_path):
    """With tune_rate 1, a child of a round-1 structure (the seed program has none) is
    TPE's, fit to the run's scored programs of that structure read back from the store."""
    store = str(tmp_path / "store")
    result = runner.invoke(app, ["run", "evolve", "--suite", "circle_packing", "--proposer", "grammar", "--budget", "8",
                                 "--set", "evolve.tune_rate=1.0",
                                 "--set", "evolve.children_per_round=4", "--store", store, "--no-tracking"])
    assert result.exit_code == 0, result.output
    rows = runner.invoke(app, ["sql", "SELECT round, operator, summary FROM candidates WHERE operator = 'circle_tpe' "
                               "ORDER BY round", "--store", store, "--format", "json"])
    assert rows.exit_code == 0, rows.output
    tuned = json.loads(rows.output)
    assert tuned, "no circle_tpe child in round 2 at tune_rate 1"
    assert all(r["round"] >= 2 and "constants from TPE over" in r["summary"] for r in tuned)
