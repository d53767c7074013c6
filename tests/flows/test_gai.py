"""gai end to end on a real store made by a tiny evolve run: the manifest's three tables
queryable in SQL, a clean run anchored GPI and not flagged, a planted held-out read (a gate
decision naming a holdout case; a select score row on one) flagged from the tables, and a
second call with the same run id writing nothing new."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from flows.evolve import evolve
from flows.gai import gai
from schemas.configs import EvolveConfig, RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]
runner = CliRunner()
TABLES = ("gai_components", "gai_versions", "gai_classification", "gate_decisions")


def config(**overrides) -> RunConfig:
    return RunConfig(**{**dict(loop="gai", suite="spin", budget=1, tracking=False), **overrides})


@pytest.fixture(scope="module")
def store_uri(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("gai") / "store")
    evolve(config=RunConfig(loop="evolve", suite="spin", budget=3, seed=0, workers=1, tracking=False,
                            evolve=EvolveConfig(children_per_round=2, islands=1)), store_uri=uri, run_id="evo")
    return uri


def counts(uri: str, run_id: str) -> dict[str, int]:
    store = open_store(uri)
    return {t: len(store.read_rows(t, run_id)) for t in TABLES}


def classification(uri: str, run_id: str) -> dict:
    (row,) = sql(open_store(uri), f"SELECT * FROM gai_classification WHERE run_id = '{run_id}' "
                                  "AND flow_id = 'evo'").to_pylist()
    return row


def test_a_clean_run_is_anchored_gpi_in_sql_and_a_rerun_writes_nothing(store_uri):
    summary = gai(config=config(), store_uri=store_uri, run_id="gai-clean")
    assert (summary["flows"], summary["GPI/anchored"], summary["heldout_read_by_selection"]) == (1, 1, "none")
    row = classification(store_uri, "gai-clean")
    assert {k: row[k] for k in ("system", "anchor", "gate_versions", "off_anchor_gates", "split_edits",
                                "heldout_reads", "flagged")} == {
        "system": "GPI", "anchor": "anchored", "gate_versions": 1, "off_anchor_gates": 0, "split_edits": 0,
        "heldout_reads": 0, "flagged": False}
    anchored = json.loads(open_store(store_uri).read_part("runs", "evo", "status", "running")[0].config_json)
    assert row["anchored_version"] == anchored["scorer_version"]
    parts = sql(open_store(store_uri), "SELECT component, mutable FROM gai_components WHERE run_id = 'gai-clean' "
                                       "ORDER BY component").to_pylist()
    assert [(p["component"], p["mutable"]) for p in parts] == [
        ("evaluation_basis", False), ("evaluator", False), ("improver", False), ("meta_evaluator", False),
        ("policy", True)]
    champions = sql(open_store(store_uri), "SELECT count(*) AS n FROM registry WHERE run_id = 'evo' AND "
                                           "(stage = 'champion' OR alias = 'champion')").to_pylist()[0]["n"]
    assert counts(store_uri, "gai-clean")["gai_versions"] == champions >= 1
    (decision,) = open_store(store_uri).read_rows("gate_decisions", "gai-clean")
    assert (decision.decision, json.loads(decision.evidence_json)["anchor"]) == ("accept", "anchored")
    assert decision.n_cases == champions and decision.ci_low <= decision.delta <= decision.ci_high
    assert abs(decision.delta - row["mean_gap"]) < 1e-12
    before = counts(store_uri, "gai-clean")
    gai(config=config(), store_uri=store_uri, run_id="gai-clean")
    assert counts(store_uri, "gai-clean") == before


def test_a_gate_decision_that_named_a_holdout_case_is_flagged(store_uri):
    store = open_store(store_uri)
    holdout = next(c.case_id for c in store.read_rows("cases", "evo") if c.split == "holdout")
    (decision, *_) = store.read_rows("gate_decisions", "evo")
    leaked = decision.model_copy(update={"decision_id": "leak", "improved_cases": [holdout]})
    store.write_part("gate_decisions", "evo", "gate", "gai-test", [leaked])
    try:
        gai(config=config(), store_uri=store_uri, run_id="gai-leak")
        row = classification(store_uri, "gai-leak")
        assert (row["heldout_reads"], row["flagged"], row["anchor"]) == (1, True, "anchored")
        assert json.loads(row["evidence_json"])["gate_heldout_cases"] == 1
        (flag,) = store.read_rows("gate_decisions", "gai-leak")
        assert flag.decision == "reject" and "1 held-out reads by selection" in flag.reason
        result = runner.invoke(app, ["audit", "--store", store_uri])
        assert result.exit_code == 0, result.output
        assert "held-out split read by selection: evo" in result.output
    finally:
        store.write_part("gate_decisions", "evo", "gate", "gai-test", [])


def test_a_select_score_row_on_a_holdout_case_is_flagged(store_uri):
    store = open_store(store_uri)
    holdout = next(c.case_id for c in store.read_rows("cases", "evo") if c.split == "holdout")
    (score, *_) = [s for s in store.read_rows("scores", "evo") if s.split == "select"]
    planted = score.model_copy(update={"execution_id": "planted", "case_id": holdout})
    store.write_part("scores", "evo", "score", "gai-test", [planted])
    try:
        gai(config=config(), store_uri=store_uri, run_id="gai-select")
        row = classification(store_uri, "gai-select")
        assert (row["heldout_reads"], row["flagged"]) == (1, True)
        assert json.loads(row["evidence_json"])["select_rows_on_heldout"] == 1
    finally:
        store.write_part("scores", "evo", "score", "gai-test", [])
    assert classification(store_uri, "gai-clean")["heldout_reads"] == 0  # the stored manifest is unchanged


def test_the_report_draws_what_sql_holds(store_uri, tmp_path):
    from cli.report import write_report
    from cli.report_gai import gai_build, gai_caption
    from storage.catalog import connect

    gai(config=config(), store_uri=store_uri, run_id="gai-clean")
    con = connect(open_store(store_uri))
    try:
        series, why_empty = gai_build(con, "gai-clean")
    finally:
        con.close()
    assert why_empty is None and series.counts() == {"GPI/anchored": (1, 0)}
    assert len(series.versions) == counts(store_uri, "gai-clean")["gai_versions"]
    assert gai_caption(series).startswith("1 flows audited: GPI/anchored 1. Held-out split read by selection: no flow.")
    path = write_report(store_uri, "gai-clean", tmp_path / "gai.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


def test_audit_of_a_missing_store_is_one_line(tmp_path):
    result = runner.invoke(app, ["audit", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code != 0 and len(result.output.strip().splitlines()) == 1, result.output
