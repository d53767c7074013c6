"""Every `llm` path this branch covers, against the real served 0.5B model: evolve and
self_healing two rounds end to end, a cut-off answer, a timeout and a server that goes
away mid-run recorded. What the model
answers is whatever it answers; the tests check that each answer is recorded with its
cost and its raw text, and that the loop goes on."""

import json
import random
import re
import threading
import time

import psutil
import pytest

from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store
from suites.registry import get_suite
from tasks.proposers.base import ParentInfo
from tasks.proposers.llm import LLMProposer
from tasks.stages.sample import task_description

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.integration]
MAX_TOKENS = 192
"""Answers are capped so the whole llm set stays under 10 minutes on 1 CPU thread."""
ANSWER = re.compile(r" \| answer=(\S+)$")


def assert_recorded_call(store, candidate) -> tuple[int, int, float]:
    """The candidate's columns hold its call's cost; its summary names the blob of the raw answer."""
    match = ANSWER.search(candidate.summary)
    assert match, candidate.summary
    tokens_in, tokens_out, latency = candidate.tokens_in, candidate.tokens_out, candidate.latency_s
    assert tokens_in > 50 and 0 < tokens_out <= MAX_TOKENS and latency > 0
    assert store.get_blob(match[1].rsplit("/", 1)[-1]).decode() is not None
    return tokens_in, tokens_out, latency


def test_evolve_on_circle_packing_two_rounds(prefect_server, served, tmp_path):
    from flows.evolve import evolve

    config = RunConfig(loop="evolve", suite="circle_packing", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", evolve=EvolveConfig(children_per_round=1, islands=1, llm_max_tokens=MAX_TOKENS))
    evolve(config=config, store_uri=str(tmp_path), run_id="llm-evolve")
    store = open_store(str(tmp_path))
    candidates = store.read_rows("candidates", "llm-evolve")
    written = sorted((c for c in candidates if c.proposer == "llm"), key=lambda c: c.round)
    assert [c.round for c in written] == [1, 2]
    executed = {e.candidate_id for e in store.read_rows("executions", "llm-evolve")}
    for c in written:
        assert_recorded_call(store, c)
        if c.operator == "llm_unusable":
            assert c.artifact_kind == "llm_answer" and c.candidate_id not in executed
            assert json.loads(store.get_blob(c.candidate_id))["reason"]
        else:
            assert c.operator in ("llm_diff", "llm_rewrite") and c.candidate_id in executed
    assert max(store.read_rows("runs", "llm-evolve"), key=lambda r: r.event_at).status == "finished"


def test_self_healing_two_rounds(prefect_server, served, tmp_path):
    from flows.self_healing import self_healing

    config = RunConfig(loop="self_healing", suite="toolsim", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", suite_params={"instances_per_template": 10},
                       evolve=EvolveConfig(llm_max_tokens=MAX_TOKENS))
    self_healing(config=config, store_uri=str(tmp_path), run_id="llm-heal")
    store = open_store(str(tmp_path))
    written = sorted((c for c in store.read_rows("candidates", "llm-heal") if c.proposer == "llm"), key=lambda c: c.round)
    assert [c.round for c in written] == [1, 2]  # a round with no usable rule is recorded, and the next one asks again
    for c in (c for c in written if c.artifact_kind == "llm_answer"):
        record = json.loads(store.get_blob(c.candidate_id))
        assert record["reason"].startswith("the llm's answer ")
        if record["answer"] is not None:
            assert_recorded_call(store, c)
    for c in (c for c in written if c.artifact_kind != "llm_answer"):  # a rule the model wrote: its call's columns
        assert c.tokens_in > 50 and 0 < c.tokens_out <= MAX_TOKENS and c.latency_s > 0
    assert max(store.read_rows("runs", "llm-heal"), key=lambda r: r.event_at).status == "finished"


def proposer(**config) -> LLMProposer:
    suite = get_suite("bin_packing")
    return LLMProposer(EvolveConfig(**config), task_description=task_description(suite), entrypoint=suite.entrypoint)


def parent(score: float = -4.5) -> ParentInfo:
    return ParentInfo("seed", get_suite("bin_packing").seed_program(), score)


def test_an_answer_cut_off_at_max_tokens_is_recorded(served):
    proposal = proposer(llm_max_tokens=16).propose([parent()], random.Random(0))
    assert proposal.operator == "llm_unusable" and proposal.tokens_out <= 16 and proposal.tokens_in > 50
    assert json.loads(proposal.source)["answer"] == proposal.answer != ""
    if proposal.tokens_out == 16:
        assert proposal.unusable.endswith("(cut off at max_tokens=16)")


def test_a_call_past_its_timeout_is_recorded(served):
    # another score than the test above: the server's prompt cache cannot answer before the timeout
    proposal = proposer(llm_max_tokens=16, llm_timeout_s=0.2).propose([parent(-7.25)], random.Random(1))
    assert proposal.operator == "llm_unusable"
    assert re.match(r"no answer: could not get an answer from http://127\.0\.0\.1:\d+/v1/chat/completions: .*timed out",
                    proposal.unusable), proposal.unusable
    assert 0.2 <= proposal.latency_s < 5


def stop_when_a_call_is_in_flight(server, done: threading.Event) -> None:
    """Stop the server once a client holds an open connection to it (a call in flight)."""
    process = psutil.Process(server.process.pid)
    while not done.is_set():
        if any(c.status == psutil.CONN_ESTABLISHED for c in process.net_connections(kind="tcp")):
            server.stop()
            return
        time.sleep(0.2)


def test_a_server_that_goes_away_mid_run_is_recorded_and_the_run_finishes(prefect_server, served, tmp_path):
    from flows.evolve import evolve

    done = threading.Event()
    watcher = threading.Thread(target=stop_when_a_call_is_in_flight, args=(served, done), daemon=True)
    watcher.start()
    config = RunConfig(loop="evolve", suite="bin_packing", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", evolve=EvolveConfig(children_per_round=1, islands=1, llm_max_tokens=MAX_TOKENS))
    try:
        evolve(config=config, store_uri=str(tmp_path), run_id="llm-gone")
    finally:
        done.set()
        watcher.join()
        if served.process.poll() is not None:
            served.start()
    store = open_store(str(tmp_path))
    written = sorted((c for c in store.read_rows("candidates", "llm-gone") if c.proposer == "llm"), key=lambda c: c.round)
    assert [(c.round, c.operator) for c in written] == [(1, "llm_unusable"), (2, "llm_unusable")]
    reasons = [json.loads(store.get_blob(c.candidate_id))["reason"] for c in written]
    assert all(r.startswith("no answer: could not get an answer from http://127.0.0.1:") for r in reasons), reasons
    assert max(store.read_rows("runs", "llm-gone"), key=lambda r: r.event_at).status == "finished"


def test_a_token_cap_stops_evolve_after_the_round_that_reached_it(prefect_server, served, tmp_path):
    from flows.evolve import evolve
    from storage.catalog import sql

    config = RunConfig(loop="evolve", suite="circle_packing", budget=3, seed=0, workers=1, tracking=False,
                       proposer="llm", max_llm_tokens=1,
                       evolve=EvolveConfig(children_per_round=1, islands=1, llm_max_tokens=MAX_TOKENS))
    evolve(config=config, store_uri=str(tmp_path), run_id="llm-capped")
    store = open_store(str(tmp_path))
    (call,) = [c for c in store.read_rows("candidates", "llm-capped") if c.round > 0]  # round 1 only: 1 call
    assert call.round == 1 and call.latency_s > 0
    tokens = call.tokens_in + call.tokens_out
    latest = max(store.read_rows("runs", "llm-capped"), key=lambda r: r.event_at)
    assert latest.status == "budget_exhausted"
    assert latest.error == f"budget cap reached: {tokens} LLM tokens of max_llm_tokens=1, before round 2"
    (ledger,) = sql(store, "SELECT * FROM ledger WHERE run_id = 'llm-capped'").to_pylist()
    assert (ledger["llm_calls"], ledger["tokens_in"], ledger["tokens_out"]) == (1, call.tokens_in, call.tokens_out)
    assert ledger["llm_seconds"] == pytest.approx(call.latency_s)
