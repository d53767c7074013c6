"""trace end to end on the real engine, store and toolsim: every (agent, condition,
task, repeat) run stored once, the same stored trajectories graded v1 and rescored v2
(nothing re-runs), the verdicts equal to what SQL computes from the score rows, the
positive control detected, mixed evidence refused, and a second call adding nothing."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from cli.report import write_report
from flows.trace import trace
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.loops.trace.attribution import grid, run_verdicts
from tasks.runtime.context import RunRef

pytestmark = [pytest.mark.integration]

TABLES = ("candidates", "executions", "steps", "scores", "distillates", "gate_decisions")
RUNS = 2 * 5 * 8 * 2
"""2 agents x 5 conditions x 8 tasks (one per template) x 2 repeats."""


def config(**overrides) -> RunConfig:
    base = dict(loop="trace", suite="toolsim", budget=2, seed=0, workers=1, tracking=False,
                suite_params={"instances_per_template": 1})
    return RunConfig(**{**base, **overrides})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("trace") / "store")
    return store_uri, trace(config=config(), store_uri=store_uri, run_id="trace-a")


def counts(store_uri: str, run_id: str = "trace-a") -> dict[str, int]:
    store = open_store(store_uri)
    return {table: len(store.read_rows(table, run_id)) for table in TABLES}


def verdict_of(store_uri: str, gate: str, agent: str) -> dict:
    rows = sql(open_store(store_uri), f"""
        SELECT g.*, json_extract_string(g.evidence_json, '$.verdict') AS verdict
        FROM gate_decisions g JOIN candidates c USING (run_id, candidate_id)
        WHERE g.run_id = 'trace-a' AND g.gate = '{gate}' AND c.summary LIKE '{agent}:%'""").to_pylist()
    assert len(rows) == 1
    return rows[0] | {"evidence": json.loads(rows[0]["evidence_json"])}


def test_every_run_is_stored_once_and_graded_under_both_versions(ran):
    store_uri, summary = ran
    found = counts(store_uri)
    assert (found["candidates"], found["executions"]) == (2, RUNS)
    assert found["scores"] == RUNS * 2 * 2  # 2 graders, versions 1 and 2
    assert found["gate_decisions"] == 2 * 2 * 4  # graders x agents x (conditions other than original)
    by_version = sql(open_store(store_uri), "SELECT scorer_version, count(DISTINCT execution_id) AS n, "
                                            "count(*) AS rows FROM scores WHERE run_id = 'trace-a' "
                                            "GROUP BY ALL ORDER BY 1").to_pylist()
    assert by_version == [{"scorer_version": "1", "n": RUNS, "rows": 2 * RUNS},
                          {"scorer_version": "2", "n": RUNS, "rows": 2 * RUNS}]
    assert len(summary) == 1 + 16


def test_the_gate_delta_is_the_paired_mean_of_the_v1_score_rows(ran):
    store_uri, _ = ran
    expected = sql(open_store(store_uri), """
        WITH r AS (
          SELECT split_part(c.summary, ':', 1) AS agent, e.noise_key AS condition, e.case_id, e.seed, s.value
          FROM scores s JOIN executions e USING (run_id, execution_id, candidate_id)
          JOIN candidates c USING (run_id, candidate_id)
          WHERE s.run_id = 'trace-a' AND s.metric = 'trace_match' AND s.scorer_version = '1')
        SELECT avg(m.value - o.value) AS delta FROM r o JOIN r m USING (agent, case_id, seed)
        WHERE o.condition = 'original' AND m.condition = 'rename' AND o.agent = 'semantic'""").to_pylist()[0]["delta"]
    row = verdict_of(store_uri, "trace:trace_match:rename", "semantic")
    assert row["delta"] == pytest.approx(expected) and expected < 0
    assert row["ci_low"] <= row["delta"] <= row["ci_high"] and row["n_cases"] == 16


def test_a_rename_is_the_graders_artifact_for_the_semantic_agent_and_a_real_failure_of_the_literal_one(ran):
    store_uri, _ = ran
    semantic = verdict_of(store_uri, "trace:trace_match:rename", "semantic")
    assert semantic["evidence"]["behaviour_changed"] == 0.0 and semantic["evidence"]["rescore_delta"] == 0.0
    assert semantic["verdict"] == "grader artifact" and semantic["decision"] == "reject"
    literal = verdict_of(store_uri, "trace:final_state:rename", "literal")
    assert literal["evidence"]["behaviour_changed"] == 1.0 and literal["delta"] < 0
    reorder = verdict_of(store_uri, "trace:final_state:reorder", "semantic")
    assert (reorder["delta"], reorder["verdict"], reorder["decision"]) == (0.0, "no effect", "accept")


def test_the_positive_control_is_detected_outside_the_noise_floor(ran):
    store_uri, _ = ran
    control = verdict_of(store_uri, "trace:trace_match:swap_descriptions", "semantic")
    assert control["verdict"] == "behaviour effect"
    assert control["evidence"]["inside_noise_floor"] is False
    assert abs(control["delta"]) > control["evidence"]["flip_rate"]
    assert control["ci_high"] < -control["evidence"]["margin"]


def test_the_noise_floor_is_the_rerun_flip_rate_of_the_stored_rows(ran):
    store_uri, _ = ran
    flips = sql(open_store(store_uri), """
        WITH r AS (
          SELECT split_part(c.summary, ':', 1) AS agent, e.noise_key AS condition, e.case_id, e.seed, s.value
          FROM scores s JOIN executions e USING (run_id, execution_id, candidate_id)
          JOIN candidates c USING (run_id, candidate_id)
          WHERE s.run_id = 'trace-a' AND s.metric = 'final_state' AND s.scorer_version = '1')
        SELECT avg(CASE WHEN o.value <> m.value THEN 1.0 ELSE 0.0 END) AS flips FROM r o JOIN r m
        USING (agent, case_id, seed) WHERE o.condition = 'original' AND m.condition = 'rerun'
        AND o.agent = 'literal'""").to_pylist()[0]["flips"]
    row = verdict_of(store_uri, "trace:final_state:rename", "literal")
    assert row["evidence"]["flip_rate"] == pytest.approx(flips)


def test_the_behaviour_diff_names_the_changed_runs_and_the_gate_weighs_its_share(ran):
    store_uri, _ = ran
    store = open_store(store_uri)
    diffs = {(c["agent"], c["condition"]): (c, d) for d in store.read_rows("distillates", "trace-a")
             for c in [json.loads(d.content)]}
    assert len(diffs) == 2 * 4
    rename, row = diffs[("literal", "rename")]
    assert rename["pairs"] == 16 and len(rename["changed"]) == 16 == len(row.source_execution_ids)
    assert diffs[("semantic", "rename")][0]["changed"] == [] and diffs[("semantic", "reorder")][0]["changed"] == []
    control, row = diffs[("semantic", "swap_descriptions")]
    found = verdict_of(store_uri, "trace:final_state:swap_descriptions", "semantic")
    assert control["changed"] and found["evidence"]["behaviour_changed"] == pytest.approx(len(control["changed"]) / 16)
    changed = sql(store, "SELECT DISTINCT noise_key FROM executions WHERE execution_id IN ("
                         + ", ".join(f"'{e}'" for e in row.source_execution_ids) + ")").to_pylist()
    assert changed == [{"noise_key": "swap_descriptions"}]


def test_mixed_evidence_is_refused(ran):
    store_uri, _ = ran
    store, ref = open_store(store_uri), RunRef(store_uri=store_uri, run_id="trace-a")
    rows = store.read_part("scores", "trace-a", "rescore", "v2")
    store.write_part("scores", "trace-a", "rescore", "v2", [rows[0].model_copy(update={"scorer_version": "1"}),
                                                            *rows[1:]])
    try:
        with pytest.raises(ValueError, match="mixed evidence is refused"):
            run_verdicts(ref, "final_state", grid(ref))
        store.write_part("scores", "trace-a", "rescore", "v2", rows[2:])
        with pytest.raises(ValueError, match="no .* reward under v2"):
            run_verdicts(ref, rows[0].metric, grid(ref))
    finally:
        store.write_part("scores", "trace-a", "rescore", "v2", rows)


def test_rescore_from_the_cli_reads_the_stored_trajectories_and_writes_nothing_twice(ran):
    store_uri, _ = ran
    before = counts(store_uri)
    result = CliRunner().invoke(app, ["rescore", "trace-a", "--scorer-version", "2", "--store", store_uri])
    assert result.exit_code == 0, result.output
    assert "already there, nothing written" in result.output and counts(store_uri) == before
    refused = CliRunner().invoke(app, ["rescore", "trace-a", "--scorer-version", "7", "--store", store_uri])
    assert refused.exit_code != 0 and "no trace grader version '7'; known: 1, 2" in refused.output


def test_rescore_from_the_cli_writes_the_new_version_beside_the_old_rows(ran, prefect_server):
    """A run whose flow rescored under v1 only; `ratchet rescore --scorer-version 2` adds
    the v2 rows of the same executions and changes no execution and no gate row."""
    store_uri, _ = ran
    trace(config=config(budget=1, trace={"conditions": ["original", "rename", "rerun"], "rescore_version": "1"}),
          store_uri=store_uri, run_id="trace-b")
    store = open_store(store_uri)
    executions, decisions = store.read_rows("executions", "trace-b"), store.read_rows("gate_decisions", "trace-b")
    assert {r.scorer_version for r in store.read_rows("scores", "trace-b")} == {"1"}
    result = CliRunner().invoke(app, ["rescore", "trace-b", "--scorer-version", "2", "--store", store_uri])
    assert result.exit_code == 0, result.output
    assert "written beside the native v1 rows" in result.output
    rows = store.read_rows("scores", "trace-b")
    v1 = {(r.execution_id, r.metric): r.value for r in rows if r.scorer_version == "1"}
    v2 = {(r.execution_id, r.metric): r.value for r in rows if r.scorer_version == "2"}
    assert len(executions) == 2 * 3 * 8 and set(v1) == set(v2) and len(v2) == 2 * len(executions)
    renamed = {e.execution_id for e in executions if e.noise_key == "rename"}
    moved = {key for key in v1 if v1[key] != v2[key]}
    assert moved and all(e in renamed and metric == "trace_match" for e, metric in moved)
    assert f"{len(moved)} (execution, grader) rewards differ from v1" in result.output
    assert store.read_rows("executions", "trace-b") == executions
    assert store.read_rows("gate_decisions", "trace-b") == decisions


def test_a_second_call_of_the_run_adds_nothing(ran, prefect_server):
    store_uri, summary = ran
    before = counts(store_uri)
    assert trace(config=config(), store_uri=store_uri, run_id="trace-a") == summary
    assert counts(store_uri) == before


def test_the_report_draws(ran, tmp_path):
    store_uri, _ = ran
    path = write_report(store_uri, "trace-a", tmp_path / "trace.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


@pytest.mark.parametrize("overrides, message", [
    ({"conditions": ["original", "rename"]}, "must hold original, rerun and at least one perturbation"),
    ({"agents": ["clever"]}, "unknown trace agents"),
])
def test_configs_that_cannot_be_measured_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        config(trace=overrides)


def test_nothing_proposes_in_a_protocol():
    with pytest.raises(ValueError, match="measures fixed arms"):
        config(proposer="llm")
