"""harness_or_model end to end on the real engine, store, sandbox and toolsim: every
(arm, task, seed) run recorded once, the gate's paired differences equal to what SQL
computes from the score rows, and a second call of the same run adds nothing."""

import json

import pytest

from cli.report import write_report
from flows.harness_or_model import harness_or_model
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]

TABLES = ("candidates", "executions", "scores", "distillates", "gate_decisions")


def config(**overrides) -> RunConfig:
    base = dict(loop="harness_or_model", suite="toolsim", budget=2, seed=0, workers=2, tracking=False,
                suite_params={"instances_per_template": 2})
    return RunConfig(**{**base, **overrides})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("hom") / "store")
    summary = harness_or_model(config=config(), store_uri=store_uri, run_id="hom-a")
    return store_uri, summary


def counts(store_uri: str) -> dict[str, int]:
    store = open_store(store_uri)
    return {table: len(store.read_rows(table)) for table in TABLES}


def test_every_arm_task_and_seed_runs_once(ran):
    store_uri, summary = ran
    # 2 arms; 8 templates x 2 instances = 16 tasks; 2 seeds: 64 runs, each with its 8 metric rows
    # (success, ended_self, hit_limit, tool_calls, usage_missing, and the 3 usage counts unless missing)
    assert counts(store_uri)["candidates"] == 2
    assert counts(store_uri)["executions"] == 64
    missing = sql(open_store(store_uri), "SELECT count(*) AS n FROM scores WHERE metric = 'usage_missing' "
                                         "AND value = 1").to_pylist()[0]["n"]
    assert counts(store_uri)["scores"] == 64 * 8 - 3 * missing
    seeds = sql(open_store(store_uri), "SELECT DISTINCT seed FROM executions ORDER BY seed").to_pylist()
    assert [r["seed"] for r in seeds] == [0, 1]
    assert set(summary) == {"run_id", "paired:success", "paired:ended_self", "paired:hit_limit",
                            "paired:tool_calls", "cost_per_solved", "subgroup:success"}


def test_the_gate_difference_is_the_per_task_mean_of_the_score_rows(ran):
    store_uri, _ = ran
    expected = sql(open_store(store_uri), """
        WITH per_task AS (
          SELECT split_part(c.summary, ':', 1) AS arm, s.case_id, avg(s.value) AS solved
          FROM scores s JOIN candidates c USING (run_id, candidate_id)
          WHERE s.metric = 'success' GROUP BY ALL)
        SELECT avg(b.solved - a.solved) AS delta
        FROM per_task a JOIN per_task b USING (case_id) WHERE a.arm = 'native' AND b.arm = 'neutral'
    """).to_pylist()[0]["delta"]
    row = sql(open_store(store_uri), "SELECT * FROM gate_decisions WHERE gate = 'paired:success'").to_pylist()[0]
    assert row["delta"] == pytest.approx(expected)
    assert row["ci_low"] <= row["delta"] <= row["ci_high"]
    assert row["n_cases"] == 16
    assert row["decision"] == ("reject" if row["ci_low"] <= 0 <= row["ci_high"] else "accept")


def test_cost_audit_names_the_runs_without_usage(ran):
    store_uri, _ = ran
    store = open_store(store_uri)
    (audit,) = store.read_rows("distillates")
    dropped = sql(store, "SELECT execution_id FROM scores WHERE metric = 'usage_missing' AND value = 1 "
                         "ORDER BY execution_id").to_pylist()
    assert audit.source_execution_ids == [r["execution_id"] for r in dropped]
    content = json.loads(audit.content)
    assert sum(content["missing"].values()) == len(dropped)
    low, high = content["ratio_bounds"]
    assert low <= content["ratio"] <= high


def test_a_second_call_of_the_run_adds_nothing(ran, prefect_server):
    store_uri, summary = ran
    before = counts(store_uri)
    again = harness_or_model(config=config(), store_uri=store_uri, run_id="hom-a")
    assert counts(store_uri) == before
    assert again == summary


def test_the_report_draws(ran, tmp_path):
    store_uri, _ = ran
    path = write_report(store_uri, "hom-a", tmp_path / "hom.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


@pytest.mark.parametrize("overrides, message", [
    ({"harness_b": "native"}, "compare two different harnesses"),
    ({"groups": {"g": ["apply_coupon"]}}, "two groups that together list every toolsim template once"),
])
def test_configs_that_cannot_be_measured_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        config(harness_or_model=overrides)


def test_nothing_proposes_in_a_protocol():
    with pytest.raises(ValueError, match="measures fixed arms"):
        config(proposer="llm")
