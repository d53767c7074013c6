"""The `ratchet` commands against a real store, engine and DuckDB."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.main import app
from cli.views import lineage
from storage.store import open_store

pytestmark = [pytest.mark.integration]
runner = CliRunner()


@pytest.fixture(scope="module")
def finished_run(prefect_server, tmp_path_factory):
    store = tmp_path_factory.mktemp("cli") / "store"
    result = runner.invoke(app, ["run", "evolve", "--suite", "circle_packing", "--budget", "3", "--seed", "4",
                                 "--store", str(store), "--no-tracking"])
    assert result.exit_code == 0, result.output
    (run_id,) = {r.run_id for r in open_store(str(store)).read_rows("runs")}
    return store, run_id


def test_help_teaches_the_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "resume", "runs", "show", "sql", "catalog", "compact", "report", "demo"):
        assert command in result.output
    assert "--budget" in runner.invoke(app, ["run", "--help"]).output


def test_sql_answers_over_the_run(finished_run):
    store, run_id = finished_run
    result = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM candidates", "--store", str(store),
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == [{"n": 4}]
    shown = runner.invoke(app, ["show", run_id, "--store", str(store)])
    assert shown.exit_code == 0 and "champions" in shown.output and "finished" in shown.output
    listed = runner.invoke(app, ["runs", "--store", str(store)])
    assert run_id[:10] in listed.output


def test_sql_error_names_the_problem_without_a_traceback(finished_run):
    store, _ = finished_run
    result = runner.invoke(app, ["sql", "SELECT nope FROM candidates", "--store", str(store)])
    assert result.exit_code == 1
    assert "SQL error" in result.stderr and "nope" in result.stderr and "Traceback" not in result.output


def test_report_writes_a_png(finished_run, tmp_path):
    store, run_id = finished_run
    out = tmp_path / "report.png"
    result = runner.invoke(app, ["report", run_id, "--store", str(store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    missing = runner.invoke(app, ["report", "no-such-run", "--store", str(store)])
    assert missing.exit_code != 0 and "no run 'no-such-run'" in missing.stderr


def test_catalog_opens_in_a_separate_duckdb_process(finished_run):
    store, _ = finished_run
    result = runner.invoke(app, ["catalog", "--store", str(store)])
    assert result.exit_code == 0, result.output
    query = ("import duckdb; c = duckdb.connect(%r, read_only=True); "
             "print(c.sql('SELECT count(*) FROM gate_decisions').fetchone()[0])") % str(store / "catalog.duckdb")
    out = subprocess.run([sys.executable, "-c", query], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"


def test_compact_keeps_rows_and_refuses_unfinished_runs(finished_run, tmp_path):
    store, run_id = finished_run
    before = open_store(str(store)).read("scores", run_id).num_rows
    result = runner.invoke(app, ["compact", run_id, "--store", str(store)])
    assert result.exit_code == 0, result.output
    assert open_store(str(store)).read("scores", run_id).num_rows == before
    assert len(open_store(str(store)).part_files("scores", run_id)) == 1
    refused = runner.invoke(app, ["compact", "no-such-run", "--store", str(tmp_path)])
    assert refused.exit_code != 0 and "has not finished" in refused.stderr


def test_bad_input_is_named(tmp_path):
    unknown = runner.invoke(app, ["run", "nope", "--store", str(tmp_path)])
    assert unknown.exit_code == 2 and "unknown loop 'nope'" in unknown.stderr
    bad_param = runner.invoke(app, ["run", "evolve", "--param", "n26", "--store", str(tmp_path)])
    assert bad_param.exit_code == 2 and "KEY=VALUE" in bad_param.stderr
    bad_suite_param = runner.invoke(app, ["run", "evolve", "--param", "size=3", "--store", str(tmp_path)])
    assert bad_suite_param.exit_code == 2 and "has no parameter 'size'" in bad_suite_param.stderr


def test_llm_proposer_without_endpoint_says_how_to_configure(tmp_path, monkeypatch):
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    result = runner.invoke(app, ["run", "evolve", "--proposer", "llm", "--store", str(tmp_path)])
    assert result.exit_code == 2
    assert "RATCHET_LLM_BASE_URL" in result.stderr and "--proposer mutate" in result.stderr


def test_a_run_started_from_the_champion_shows_its_lineage(finished_run, tmp_path):
    store, first = finished_run
    result = runner.invoke(app, ["run", "evolve", "--suite", "circle_packing", "--budget", "2", "--seed", "5",
                                 "--store", str(store), "--no-tracking", "--start-from", "champion"])
    assert result.exit_code == 0, result.output
    (second,) = {r.run_id for r in open_store(str(store)).read_rows("runs")} - {first}
    champion = max((r for r in open_store(str(store)).read_rows("registry", first)), key=lambda r: r.version)
    shown = runner.invoke(app, ["show", second, "--store", str(store)])
    assert shown.exit_code == 0, shown.output
    assert "lineage" in shown.output and champion.candidate_id[:12] in shown.output.split("lineage", 1)[1]
    chain = lineage(open_store(str(store)), second)
    assert [(c["run"], c["started_from"]) for c in chain] == [(first, None), (second, first)]
    assert chain[0]["champion"] == champion.candidate_id[:12]
    assert chain[1]["select_score"] >= chain[0]["select_score"]
    report = runner.invoke(app, ["report", second, "--store", str(store), "--out", str(tmp_path / "lineage.png")])
    assert report.exit_code == 0, report.output
    assert (tmp_path / "lineage.png").stat().st_size > 10_000
    from cli.report import lineage_caption

    caption = lineage_caption(str(store), second)
    assert caption.index(first) < caption.index(second) and champion.candidate_id[:12] in caption
