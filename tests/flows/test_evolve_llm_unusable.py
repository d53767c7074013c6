"""evolve with `proposer: llm` whose endpoint is gone (a closed port, a real connection
refusal): every child is a recorded `llm_unusable` candidate, never executed, and the run
finishes. The answers of a served model are tested in tests/llm/ (marked `llm`)."""

import json
import socket

import pytest
from typer.testing import CliRunner

from cli.main import app
from cli.views import SHOW_QUERIES

from flows.evolve import evolve
from schemas.configs import EvolveConfig, RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_endpoint_that_is_gone_is_recorded_and_the_run_finishes(prefect_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RATCHET_LLM_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("RATCHET_LLM_MODEL", "gone-model")
    config = RunConfig(loop="evolve", suite="circle_packing", budget=4, seed=1, workers=1, tracking=False,
                       proposer="llm", evolve=EvolveConfig(children_per_round=2, islands=1))
    evolve(config=config, store_uri=str(tmp_path), run_id="run-gone")
    store = open_store(str(tmp_path))
    candidates = store.read_rows("candidates", "run-gone")
    unusable = [c for c in candidates if c.operator == "llm_unusable"]
    assert len(candidates) == 5 and len(unusable) == 4  # the seed + 2 rounds of 2 children
    assert {c.artifact_kind for c in unusable} == {"llm_answer"} and {c.round for c in unusable} == {1, 2}
    assert len({c.candidate_id for c in unusable}) == 4  # each call's record is its own content
    for c in unusable:
        record = json.loads(store.get_blob(c.candidate_id))
        assert record["reason"].startswith("no answer: could not get an answer from http://127.0.0.1:")
        assert record["model"] == "gone-model" and record["answer"] == ""
        assert c.summary.startswith("llm_unusable by gone-model: no answer: ")
        assert c.summary.endswith(" | answer=" + store.blob_uri(store.put_blob(b"")))  # the empty answer's blob
        assert (c.tokens_in, c.tokens_out) == (None, None) and c.latency_s is not None and c.latency_s >= 0
    executed = {e.candidate_id for e in store.read_rows("executions", "run-gone")}
    assert executed.isdisjoint(c.candidate_id for c in unusable) and len(executed) == 1
    assert max(store.read_rows("runs", "run-gone"), key=lambda r: r.event_at).status == "finished"
    (count,) = sql(store, "SELECT count(*) AS n FROM candidates WHERE artifact_kind = 'llm_answer'").to_pylist()
    assert count["n"] == 4
    shown = CliRunner().invoke(app, ["show", "run-gone", "--store", str(tmp_path)], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "parse_apply_rate" in shown.output
    (row,) = sql(store, SHOW_QUERIES["llm"].replace("$run", "'run-gone'")).to_pylist()
    assert (row["llm_calls"], row["usable"], row["parse_apply_rate"], row["tokens_in"]) == (4, 0, 0.0, None)
    (ledger,) = sql(store, "SELECT * FROM ledger WHERE run_id = 'run-gone'").to_pylist()
    n_executions = len(store.read_rows("executions", "run-gone"))
    assert (ledger["llm_calls"], ledger["tokens_in"], ledger["tokens_out"], ledger["evaluations"]) == (4, 0, 0, n_executions)
    assert ledger["llm_seconds"] == pytest.approx(sum(c.latency_s for c in unusable))
    assert "ledger" in shown.output  # its title (the narrow test console folds column names)


def test_self_healing_records_each_unanswered_round_and_goes_on(prefect_server, tmp_path, monkeypatch):
    from flows.self_healing import self_healing

    monkeypatch.setenv("RATCHET_LLM_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
    monkeypatch.setenv("RATCHET_LLM_MODEL", "gone-model")
    config = RunConfig(loop="self_healing", suite="toolsim", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", suite_params={"instances_per_template": 10})
    self_healing(config=config, store_uri=str(tmp_path), run_id="heal-gone")
    store = open_store(str(tmp_path))
    unusable = sorted((c for c in store.read_rows("candidates", "heal-gone") if c.artifact_kind == "llm_answer"),
                      key=lambda c: c.round)
    assert [(c.round, c.operator, c.proposer) for c in unusable] == [(1, "llm_unusable", "llm"), (2, "llm_unusable", "llm")]
    for c in unusable:
        record = json.loads(store.get_blob(c.candidate_id))
        assert record["reason"].startswith("the llm's answer is not a valid harness: no answer: could not get an answer")
        assert record["answer"] == "" and c.summary.endswith(" | answer=" + store.blob_uri(store.put_blob(b"")))
        assert (c.tokens_in, c.tokens_out) == (None, None) and c.latency_s is not None and c.latency_s >= 0
    assert max(store.read_rows("runs", "heal-gone"), key=lambda r: r.event_at).status == "finished"
