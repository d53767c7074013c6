"""The llm proposer against the real served 0.5B model: evolve and self_healing two
rounds end to end, and each way an answer fails recorded: cut off at max_tokens, past
its timeout, a server that goes away mid-run, a prompt over the context window, an
answer that leaves the program unchanged. What the model answers is whatever it answers; the tests check that each answer is recorded with its
cost and its raw text, and that the loop goes on."""

import json
import random
import re
import string
import threading
import time
from pathlib import Path

import psutil
import pytest

from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store
from suites.registry import get_suite
from tasks.proposers.base import ParentInfo
from tasks.proposers.llm import LLMProposer
from tasks.stages.sample import task_description

pytestmark = [pytest.mark.llm, pytest.mark.slow, pytest.mark.integration]


def test_evolve_on_circle_packing_two_rounds(prefect_server, served, recorded, tmp_path):
    from flows.evolve import evolve

    config = RunConfig(loop="evolve", suite="circle_packing", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", evolve=EvolveConfig(children_per_round=1, islands=1, llm_max_tokens=recorded.max_tokens))
    evolve(config=config, store_uri=str(tmp_path), run_id="llm-evolve")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-evolve")
    assert [c.round for c in written] == [1, 2]
    assert all(c.operator in ("llm_unusable", "llm_diff", "llm_rewrite") for c in written)
    assert recorded.finished(store, "llm-evolve")


def test_self_healing_two_rounds(prefect_server, served, recorded, tmp_path):
    from flows.self_healing import self_healing

    config = RunConfig(loop="self_healing", suite="toolsim", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", suite_params={"instances_per_template": 10},
                       evolve=EvolveConfig(llm_max_tokens=recorded.max_tokens))
    self_healing(config=config, store_uri=str(tmp_path), run_id="llm-heal")
    store = open_store(str(tmp_path))
    written = recorded.llm_rows(store, "llm-heal")
    assert [c.round for c in written] == [1, 2]  # a round with no usable rule is recorded, and the next one asks again
    assert all(c.operator in ("llm_unusable", "llm_rule") for c in written)
    assert recorded.finished(store, "llm-heal")


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


def stop_when_a_call_is_in_flight(server, done: threading.Event, store: Path) -> None:
    """Stop the server once a client holds an open connection to it (a call in flight),
    or at the latest once round 1's candidates are published (a call the cached prompt
    answered between two looks), so round 2's call always finds it gone."""
    process = psutil.Process(server.process.pid)
    while not done.is_set():
        in_flight = any(c.status == psutil.CONN_ESTABLISHED for c in process.net_connections(kind="tcp"))
        if in_flight or any("r0001" in p.name for p in (store / "tables" / "candidates").rglob("*.parquet")):
            server.stop()
            return
        time.sleep(0.05)


def test_a_server_that_goes_away_mid_run_is_recorded_and_the_run_finishes(prefect_server, served, recorded,
                                                                          tmp_path):
    from flows.evolve import evolve

    done = threading.Event()
    watcher = threading.Thread(target=stop_when_a_call_is_in_flight, args=(served, done, tmp_path), daemon=True)
    watcher.start()
    config = RunConfig(loop="evolve", suite="bin_packing", budget=2, seed=0, workers=1, tracking=False,
                       proposer="llm", evolve=EvolveConfig(children_per_round=1, islands=1, llm_max_tokens=recorded.max_tokens))
    try:
        evolve(config=config, store_uri=str(tmp_path), run_id="llm-gone")
    finally:
        done.set()
        watcher.join()
        if served.process.poll() is not None:
            served.start()
    store = open_store(str(tmp_path))
    written = sorted((c for c in store.read_rows("candidates", "llm-gone") if c.proposer == "llm"), key=lambda c: c.round)
    assert [c.round for c in written] == [1, 2]  # round 1's call may have been answered before the stop
    assert written[-1].operator == "llm_unusable"
    gone = [c for c in written if c.operator == "llm_unusable"
            and json.loads(store.get_blob(c.candidate_id))["reason"].startswith("no answer: could not get an answer")]
    assert gone and gone[-1].round == 2, [c.summary for c in written]
    assert recorded.finished(store, "llm-gone")


def test_a_prompt_over_the_context_window_is_recorded(served):
    padding = "\n".join(f"# note {i}: " + "pad " * 24 for i in range(500))  # about 13k tokens, n_ctx is 4096
    big = ParentInfo("big", get_suite("bin_packing").seed_program() + padding + "\n", -4.5)
    proposal = proposer(llm_max_tokens=16).propose([big], random.Random(2))
    assert proposal.operator == "llm_unusable" and proposal.answer == ""
    assert re.match(r"no answer: http://127\.0\.0\.1:\d+/v1/chat/completions answered HTTP 400: .*maximum context length is 4096 tokens",
                    proposal.unusable), proposal.unusable
    assert json.loads(proposal.source)["reason"] == proposal.unusable


def test_an_answer_that_leaves_the_program_unchanged_is_recorded(served):
    # the prompts are data: these ask the model, greedily, to copy the parent back
    copier = LLMProposer(EvolveConfig(llm_max_tokens=96), entrypoint="priority", temperature=0.0)
    copier.system_prompt = ("You copy Python programs exactly. Answer with the program in one ```python fenced "
                            "block and nothing else.")
    copier.user_template = string.Template("Repeat this Python program exactly, unchanged:\n\n```python\n"
                                           "$parent_source\n```")
    source = "def priority(item, bins):\n    return -(bins - item)\n"
    proposal = copier.propose([ParentInfo("p", source, -4.5)], random.Random(3))
    assert proposal.operator == "llm_unusable", proposal.answer
    assert proposal.unusable.startswith("the answer leaves the program unchanged"), proposal.unusable
    assert json.loads(proposal.source)["answer"] == proposal.answer and source.strip() in proposal.answer
    assert proposal.tokens_out > 0


def test_a_token_cap_stops_evolve_after_the_round_that_reached_it(prefect_server, served, recorded, tmp_path):
    from flows.evolve import evolve
    from storage.catalog import sql

    config = RunConfig(loop="evolve", suite="circle_packing", budget=3, seed=0, workers=1, tracking=False,
                       proposer="llm", max_llm_tokens=1,
                       evolve=EvolveConfig(children_per_round=1, islands=1, llm_max_tokens=recorded.max_tokens))
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
