"""codemidas runs for real from `ratchet run` on two colorsys functions: every built
candidate has its record, checks and attempts in SQL, every gate row explains itself,
the registered set is the sha256 of its blob and holds exactly the accepted
environments, a rerun adds nothing, and a run from the champion builds the next
candidates of the pool on top of the set."""

import json

import pytest
from typer.testing import CliRunner

from cli.main import app
from flows.codemidas import codemidas
from schemas.ids import content_id
from storage.catalog import sql
from storage.store import open_store
from tasks.runtime.lifecycle import stored_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]
runner = CliRunner()
ARGS = ["--budget", "1", "--no-tracking", "--set", "codemidas.modules=[colorsys]", "--set", "codemidas.per_round=2",
        "--set", "codemidas.site_mutants=4", "--set", "codemidas.n_tests=12"]
TABLE_SQL = ("SELECT json_extract_string(content, '$.cand_id') AS cand_id, "
             "json_extract_string(content, '$.stage_reached') AS stage FROM distillates "
             "WHERE kind = 'codemidas_candidate' AND run_id = '{run}' ORDER BY cand_id")


def run_ids(store: str) -> list[str]:
    return [r["run_id"] for r in sql(open_store(store), "SELECT run_id FROM runs_current ORDER BY started_at").to_pylist()]


@pytest.fixture(scope="module")
def finished(prefect_server, tmp_path_factory):
    store = str(tmp_path_factory.mktemp("codemidas") / "store")
    result = runner.invoke(app, ["run", "codemidas", "--store", store, *ARGS])
    assert result.exit_code == 0, result.output + repr(result.exception)
    [run_id] = run_ids(store)
    return store, run_id


def test_every_candidate_answers_in_sql_with_its_checks_and_attempts(finished):
    store, run_id = finished
    answer = runner.invoke(app, ["sql", TABLE_SQL.format(run=run_id), "--store", store, "--format", "json"])
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.stdout) == [{"cand_id": "colorsys::rgb_to_yiq", "stage": "kept"},
                                         {"cand_id": "colorsys::yiq_to_rgb", "stage": "kept"}]
    rows = [json.loads(d.content) for d in open_store(store).read_rows("distillates", run_id)]
    checks = [r for r in rows if "split" in r and "ref_passes" in r]
    assert sorted((c["cand_id"], c["split"]) for c in checks) == [
        (f"colorsys::{f}", s) for f in ("rgb_to_yiq", "yiq_to_rgb") for s in ("holdout", "select")]
    attempts = [r for r in rows if "reviewer_verdict" in r]
    assert len(attempts) == 2 * (1 + 2 + 4 + 1)
    assert {a["solver"] for a in attempts if a["leak_found"]} == {"retrieval"}


def test_gate_rows_explain_themselves_and_the_set_is_its_content(finished):
    store, run_id = finished
    s = open_store(store)
    decisions = s.read_rows("gate_decisions", run_id)
    envs = [d for d in decisions if d.gate == "codemidas_env"]
    assert len(envs) == 2 and all(d.decision == "accept" for d in envs)
    for d in envs:
        evidence = json.loads(d.evidence_json)
        assert d.reason.startswith(evidence["cand_id"]) and d.select_score == evidence["gate1_select"]["mutation_score"]
        assert content_id(s.get_blob(d.candidate_id)) == d.candidate_id  # the environment's own blob
    [champion] = s.read_rows("registry", run_id)
    blob = s.get_blob(champion.candidate_id)
    assert champion.name == "codemidas/codemidas" and content_id(blob) == champion.candidate_id
    envset = json.loads(blob)
    assert [e["task_id"] for e in envset["environments"]] == ["colorsys::rgb_to_yiq", "colorsys::yiq_to_rgb"]
    assert champion.holdout_score == sum(e["holdout_holds"] for e in envset["environments"]) / 2
    [set_row] = [d for d in decisions if d.gate == "codemidas_set"]
    assert set_row.decision == "accept" and set_row.candidate_id == champion.candidate_id


def test_a_rerun_adds_nothing(finished):
    store, run_id = finished
    s = open_store(store)
    before = {t: len(s.read_rows(t, run_id)) for t in ("candidates", "distillates", "gate_decisions", "registry")}
    codemidas(config=stored_config(store, run_id), store_uri=store, run_id=run_id)  # every stage again
    assert {t: len(s.read_rows(t, run_id)) for t in before} == before


def test_a_run_from_the_champion_builds_the_next_candidates_on_top(finished):
    store, first = finished
    result = runner.invoke(app, ["run", "codemidas", "--store", store, "--start-from", "champion", *ARGS])
    assert result.exit_code == 0, result.output + repr(result.exception)
    [second] = [r for r in run_ids(store) if r != first]
    answer = runner.invoke(app, ["sql", TABLE_SQL.format(run=second), "--store", store, "--format", "json"])
    assert [r["cand_id"] for r in json.loads(answer.stdout)] == ["colorsys::rgb_to_hls", "colorsys::rgb_to_hsv"]
    s = open_store(store)
    [old] = s.read_rows("registry", first)
    [new] = s.read_rows("registry", second)
    assert new.version == old.version + 1
    [row] = s.read_rows("candidates", second)
    assert row.parent_ids == [old.candidate_id] and row.candidate_id == new.candidate_id
    assert len(json.loads(s.get_blob(new.candidate_id))["environments"]) == 2 + sum(
        r["stage"] == "kept" for r in json.loads(answer.stdout))


def test_the_report_draws_the_yield_and_the_scores(finished, tmp_path):
    from cli.report import draw, report_series, write_report

    store, run_id = finished
    series = report_series(store, run_id)
    assert series["family"] == "codemidas" and len(series["series"].candidates) == 2
    assert len(series["series"].checks) == 4
    _, caption = draw(series)
    assert caption.startswith("2 candidate functions built: kept 2.")
    path = write_report(store, run_id, tmp_path / "codemidas.png")
    assert path.stat().st_size > 20_000
