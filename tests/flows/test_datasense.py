"""datasense end to end on the real engine, store and arith (tiny recipe): every student
trained and verified once, the gate's measures equal to what the stored evaluation rows
give, and a second call of the run adds nothing."""

import json

import pytest

from cli.report import write_report
from flows.datasense import datasense
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "distillates", "gate_decisions")
TINY = {"pool_size": 50, "groups": 5, "base_steps": 5, "sft_steps": 4, "batch_size": 4, "random_subsets": 2,
        "resamples": 200, "selectors": ["random", "loss", "length"]}


def config() -> RunConfig:
    return RunConfig(loop="datasense", suite="arith", budget=1, seed=0, tracking=False,
                     suite_params={"n_per_category": 30}, datasense=TINY)


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("datasense") / "store")
    return uri, datasense(config=config(), store_uri=uri, run_id="ds")


def counts(uri: str) -> dict[str, int]:
    store = open_store(uri)
    return {table: len(store.read_rows(table, "ds")) for table in TABLES}


def test_every_student_is_trained_and_verified_once(ran):
    uri, summary = ran
    found = counts(uri)
    assert found["candidates"] == 1 + 3 * 5 + 2  # the base, a student per group per selector, 2 random subsets
    holdout = sql(open_store(uri), "SELECT count(DISTINCT case_id) AS n FROM executions").to_pylist()[0]["n"]
    assert found["executions"] == found["scores"] == (3 * 5 + 2) * holdout  # each student on every holdout case
    assert found["distillates"] == 1 + 3  # the pool and one submission per selector
    assert found["gate_decisions"] == 3 + 3  # per pool and over all pools, per selector
    assert set(summary) == {"run_id", "datasense:random", "datasense:loss", "datasense:length"}
    splits = sql(open_store(uri), "SELECT DISTINCT split FROM executions").to_pylist()
    assert splits == [{"split": "holdout"}]  # selectors never see a score; students only the hidden split


def test_the_gain_is_what_the_evaluation_rows_give(ran):
    uri, _ = ran
    store = open_store(uri)
    row = sql(store, "SELECT * FROM gate_decisions WHERE gate = 'datasense:loss:pool00'").to_pylist()[0]
    evidence = json.loads(row["evidence_json"])
    accuracy = {r["summary"].split(" ")[2].rstrip(":"): r["acc"] for r in sql(store, """
        SELECT c.summary, avg(s.value) AS acc FROM scores s JOIN candidates c USING (run_id, candidate_id)
        GROUP BY ALL""").to_pylist()}
    groups = [accuracy[f"loss:g{g}"] for g in range(5)]
    assert evidence["actual_accuracy"] == pytest.approx(groups)
    reference = (accuracy["reference:r0"] + accuracy["reference:r1"]) / 2
    assert row["delta"] == pytest.approx(groups[evidence["predicted_best"]] - reference)
    assert row["ci_low"] <= row["delta"] <= row["ci_high"]


def test_a_second_call_adds_nothing_and_the_report_draws(ran, prefect_server, tmp_path):
    uri, summary = ran
    before = counts(uri)
    assert datasense(config=config(), store_uri=uri, run_id="ds") == summary
    assert counts(uri) == before
    path = write_report(uri, "ds", tmp_path / "ds.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_configs_that_cannot_be_verified_are_refused():
    with pytest.raises(ValueError, match="does not split into 5 equal groups"):
        RunConfig(loop="datasense", suite="arith", budget=1, datasense={"pool_size": 52})
    with pytest.raises(ValueError, match="unknown selectors"):
        RunConfig(loop="datasense", suite="arith", budget=1, datasense={"selectors": ["oracle"]})
