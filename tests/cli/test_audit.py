"""`ratchet audit` (GAI) on a store of real runs: each run placed on the two switches from
what it declares and records; a ruler that changed within a run and a gate that weighed a
held-out case are found in the rows, wherever they came from."""

import json

import pytest
from typer.testing import CliRunner

from cli.audit import audit
from cli.main import app
from flows.evolve import evolve
from flows.harness_or_model import harness_or_model
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store

pytestmark = [pytest.mark.integration]
runner = CliRunner()


@pytest.fixture(scope="module")
def store_uri(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("audit") / "store")
    evolve(config=RunConfig(loop="evolve", suite="spin", budget=3, seed=0, workers=1, tracking=False,
                            evolve=EvolveConfig(children_per_round=2, islands=1)), store_uri=uri, run_id="evo")
    harness_or_model(config=RunConfig(loop="harness_or_model", suite="toolsim", budget=1, tracking=False,
                                      suite_params={"instances_per_template": 1}), store_uri=uri, run_id="hom")
    return uri


def by_run(uri: str) -> dict[str, dict]:
    return {row["run_id"]: row for row in audit(uri)["classification"]}


def test_real_runs_are_anchored_fixed_updaters_that_never_read_held_out(store_uri):
    rows = by_run(store_uri)
    assert {k: rows["evo"][k] for k in ("system", "anchor", "gate_versions", "heldout_reads")} == {
        "system": "GPI", "anchor": "anchored", "gate_versions": 1, "heldout_reads": 0}
    assert rows["evo"]["versions"] >= 1  # the seed at least was registered, with its holdout score
    # the protocol runs both arms on every split, but nothing in it selects: no flag
    assert (rows["hom"]["anchor"], rows["hom"]["heldout_reads"], rows["hom"]["versions"]) == (
        "anchored", 0, 0)


def test_a_gate_that_weighed_a_second_scorer_version_is_goal_drift(store_uri):
    store = open_store(store_uri)
    (decision, *_) = [g for g in store.read_rows("gate_decisions") if g.run_id == "evo"]
    edited = decision.model_copy(update={"decision_id": "drift", "scorer_version": "edited"})
    store.write_part("gate_decisions", "evo", "gate", "audit-drift", [edited])
    try:
        assert (by_run(store_uri)["evo"]["anchor"], by_run(store_uri)["evo"]["gate_versions"]) == (
            "goal-drifting", 2)
    finally:
        store.write_part("gate_decisions", "evo", "gate", "audit-drift", [])
    assert by_run(store_uri)["evo"]["anchor"] == "anchored"


def test_rescored_rows_are_counted_apart_not_as_drift(store_uri):
    store = open_store(store_uri)
    (row, *_) = [s for s in store.read_rows("scores") if s.run_id == "evo"]
    store.write_part("scores", "evo", "rescore", "audit-test", [row.model_copy(update={"scorer_version": "fixed"})])
    try:
        assert (by_run(store_uri)["evo"]["anchor"], by_run(store_uri)["evo"]["scorer_versions"]) == ("anchored", 2)
    finally:
        store.write_part("scores", "evo", "rescore", "audit-test", [])


def test_a_gate_that_weighed_a_held_out_case_is_flagged(store_uri):
    store = open_store(store_uri)
    holdout = next(c.case_id for c in store.read_rows("cases") if c.run_id == "evo" and c.split == "holdout")
    (decision, *_) = [g for g in store.read_rows("gate_decisions") if g.run_id == "evo"]
    leaked = decision.model_copy(update={"decision_id": "leak", "improved_cases": [holdout]})
    store.write_part("gate_decisions", "evo", "gate", "audit-test", [leaked])
    try:
        assert by_run(store_uri)["evo"]["heldout_reads"] == 1
        result = runner.invoke(app, ["audit", "--store", store_uri])
        assert result.exit_code == 0, result.output
        assert "held-out split read by selection: evo" in result.output
    finally:
        store.write_part("gate_decisions", "evo", "gate", "audit-test", [])


def test_json_output_has_the_three_tables(store_uri):
    result = runner.invoke(app, ["audit", "--store", store_uri, "--format", "json"])
    assert result.exit_code == 0, result.output
    tables = json.loads(result.output)
    assert set(tables) == {"classification", "components", "versions"}
    assert len([c for c in tables["components"] if c["run_id"] == "evo"]) == 5
