"""`ratchet run harness_or_model --suite codemidas` end to end on the real engine, store and
sandbox at a tiny budget (3 tasks, 2 seeds): every (arm, task, seed) run recorded once
with its counts apart, the gate's rows the same as on toolsim and equal to what SQL
computes from the score rows, and the traces the policy wrote."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from storage.catalog import sql
from storage.store import open_store
from tasks.stages.score import blob_id

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ARGS = ["--suite", "codemidas", "--budget", "2", "--set", "harness_or_model.codemidas_tasks=3",
        "--set", "harness_or_model.resamples=200"]


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("hom_codemidas") / "store")
    result = CliRunner().invoke(app, ["run", "harness_or_model", "--store", store_uri, "--no-tracking",
                                      *ARGS])
    assert result.exit_code == 0, result.output
    return store_uri, result.output


def rows(store_uri: str, query: str) -> list[dict]:
    return sql(open_store(store_uri), query).to_pylist()


def test_every_arm_task_and_seed_runs_once_with_its_counts(ran):
    store_uri, _ = ran
    runs = rows(store_uri, "SELECT candidate_id, case_id, seed FROM executions")
    assert len(runs) == 2 * 3 * 2 and len({(r["candidate_id"], r["case_id"], r["seed"]) for r in runs}) == 12
    assert {r["case_id"] for r in runs} == {"bisect::bisect_right", "bisect::bisect_left", "colorsys::rgb_to_yiq"}
    per_run = rows(store_uri, """SELECT execution_id, max(value) FILTER (metric = 'ended_self') AS ended_self,
                                        max(value) FILTER (metric = 'hit_limit') AS hit_limit
                                 FROM scores GROUP BY execution_id""")
    assert len(per_run) == 12
    assert all(r["ended_self"] + r["hit_limit"] == 1.0 for r in per_run)  # a run ends one way
    gates = {r["gate"] for r in rows(store_uri, "SELECT gate FROM gate_decisions")}
    assert gates == {"paired:success", "paired:ended_self", "paired:hit_limit", "paired:tool_calls",
                     "cost_per_solved", "subgroup:success"}


def test_native_seed_zero_stops_at_its_limit_before_the_delegating_body(ran):
    # seed 0 keeps the listed order (return None, return first argument, delegate) and
    # native allows 2 attempts: the delegating body is never tried there
    store_uri, _ = ran
    native = rows(store_uri, """SELECT e.output_uri FROM executions e JOIN candidates c USING (run_id, candidate_id)
                                WHERE e.seed = 0 AND c.summary LIKE 'native:%'""")
    traces = [json.loads(open_store(store_uri).get_blob(blob_id(r["output_uri"])))["trace"] for r in native]
    assert [t["status"] for t in traces] == ["step_limit"] * 3
    assert all([a["strategy"] for a in t["attempts"]] == ["return_none", "return_first_arg"] for t in traces)


def test_the_gate_difference_is_the_per_task_mean_of_the_score_rows(ran):
    store_uri, _ = ran
    for metric in ("success", "ended_self", "hit_limit", "tool_calls"):
        expected = rows(store_uri, f"""
            WITH per_task AS (
              SELECT split_part(c.summary, ':', 1) AS arm, s.case_id, avg(s.value) AS v
              FROM scores s JOIN candidates c USING (run_id, candidate_id)
              WHERE s.metric = '{metric}' GROUP BY ALL)
            SELECT avg(b.v - a.v) AS delta
            FROM per_task a JOIN per_task b USING (case_id) WHERE a.arm = 'native' AND b.arm = 'neutral'
        """)[0]["delta"]
        (row,) = rows(store_uri, f"SELECT * FROM gate_decisions WHERE gate = 'paired:{metric}'")
        assert row["delta"] == pytest.approx(expected) and row["n_cases"] == 3
        assert row["ci_low"] <= row["delta"] <= row["ci_high"]


def test_the_subgroups_are_the_documented_and_undocumented_tasks(ran):
    store_uri, _ = ran
    (row,) = rows(store_uri, "SELECT evidence_json FROM gate_decisions WHERE gate = 'subgroup:success'")
    groups = json.loads(row["evidence_json"])["groups"]
    assert groups == {"documented": ["bisect::bisect_right", "bisect::bisect_left"],
                      "undocumented": ["colorsys::rgb_to_yiq"]}
