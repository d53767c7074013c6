"""The LLM proposer against a real HTTP server on 127.0.0.1 that stands in for the
endpoint: it answers canned OpenAI-format JSON and records what it was sent."""

import json
import random
import re
import socket
import string
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from schemas.configs import EvolveConfig
from tasks.proposers import make_proposer
from tasks.proposers.base import (
    FailureMemoryItem,
    ParentInfo,
    ProposerUnavailable,
    TerminalProposerError,
    TransientProposerError,
)
from tasks.proposers.base import Proposal
from tasks.proposers.llm import UNAVAILABLE, LLMProposer, call_cost, chat_completion, cost_note, load_prompt

PROGRAM = """import numpy as np

def priority(item, bins):
    score = -(bins - item)
    if item > 0.5 * bins.max():
        score = score * 1.5
    return score
"""
ANSWER = """Boost nearly full bins harder.
<<<<<<< SEARCH
        score = score * 1.5
=======
        score = score * 2.5
>>>>>>> REPLACE
"""


def completion(content: str, finish_reason: str = "stop") -> bytes:
    return json.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 212, "completion_tokens": 37, "total_tokens": 249},
        }
    ).encode()


@dataclass
class Endpoint:
    url: str
    requests: list = field(default_factory=list)
    replies: list = field(default_factory=list)
    """(status, body bytes, delay seconds) answered in order."""


@pytest.fixture
def endpoint():
    state = Endpoint(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
            status, payload, delay = state.replies.pop(0)
            time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                return  # the timeout test's client has hung up on purpose

        def log_message(self, *args):
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


def proposer_for(url: str, **config) -> LLMProposer:
    env = {"RATCHET_LLM_BASE_URL": url, "RATCHET_LLM_MODEL": "tiny-coder", "RATCHET_LLM_API_KEY": "sk-test"}
    return LLMProposer(
        EvolveConfig(failure_min_support=3, **config),
        task_description="Online bin packing: pick the bin for each item.",
        entrypoint="priority",
        env=env,
    )


def assert_unusable(proposal, reason: str, answer: str = "") -> dict:
    """An unusable proposal: never a program, its record names the parent, seed and reason."""
    assert proposal.operator == "llm_unusable" and proposal.proposer == "llm"
    assert re.search(reason, proposal.unusable), proposal.unusable
    record = json.loads(proposal.source)
    assert record["parent_id"] == "a" * 64 and record["answer"] == answer == proposal.answer
    assert record["reason"] == proposal.unusable and record["seed"] == random.Random(0).randrange(2**31)
    assert proposal.summary.startswith("llm_unusable by tiny-coder: ")
    assert proposal.latency_s is not None and proposal.latency_s >= 0
    return record


PARENT = ParentInfo("a" * 64, PROGRAM, 0.8125, ("timeout", "ZeroDivisionError", "timeout"))
MEMORY = [FailureMemoryItem("operator", "ZeroDivisionError", 4), FailureMemoryItem("compare", "timeout", 1)]


def test_unconfigured_llm_says_how_to_configure_it(monkeypatch):
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("RATCHET_LLM_MODEL", raising=False)
    assert UNAVAILABLE == (
        "the llm proposer needs RATCHET_LLM_BASE_URL and RATCHET_LLM_MODEL; "
        "set them to an OpenAI-compatible endpoint, or use --proposer mutate"
    )
    proposer = make_proposer("llm", EvolveConfig())
    assert proposer.available() == (False, UNAVAILABLE)
    with pytest.raises(ProposerUnavailable) as raised:
        proposer.propose([PARENT], random.Random(0))
    assert str(raised.value) == UNAVAILABLE
    half = LLMProposer(EvolveConfig(), env={"RATCHET_LLM_BASE_URL": "http://127.0.0.1:1/v1"})
    assert half.available() == (False, UNAVAILABLE)


def test_round_trip_sends_the_prompt_and_applies_the_answer(endpoint):
    endpoint.replies.append((200, completion(ANSWER), 0.0))
    parents = [PARENT, ParentInfo("b" * 64, "x = 1", None)]
    proposal = proposer_for(endpoint.url).propose(parents, random.Random(7), MEMORY)

    assert proposal.source == PROGRAM.replace("score * 1.5", "score * 2.5")
    assert proposal.operator == "llm_diff" and proposal.proposer == "llm"
    assert proposal.parent_ids == ("a" * 64,)
    assert proposal.summary == "llm_diff by tiny-coder: Boost nearly full bins harder."
    assert (proposal.answer, proposal.tokens_in, proposal.tokens_out) == (ANSWER, 212, 37)
    assert proposal.unusable is None and proposal.latency_s >= 0

    (request,) = endpoint.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "tiny-coder"
    assert body["seed"] == random.Random(7).randrange(2**31)
    assert body["max_tokens"] == 1024
    system, user = body["messages"]
    assert system == {"role": "system", "content": load_prompt("system.txt")}
    assert user["role"] == "user"
    text = user["content"]
    assert PROGRAM.rstrip("\n") in text
    assert "Online bin packing: pick the bin for each item." in text and "`priority`" in text
    assert "(score 0.8125, higher is better)" in text
    assert "Errors of its last runs: timeout (2x); ZeroDivisionError (1x)" in text
    assert "Edits that often failed: operator edits led to ZeroDivisionError (4x)" in text
    assert "compare edits" not in text  # support 1 < failure_min_support 3
    assert "$" not in text.replace(PROGRAM.rstrip("\n"), "")


def test_a_fenced_program_answer_is_a_rewrite(endpoint):
    program = "def priority(item, bins):\n    return bins - item\n"
    endpoint.replies.append((200, completion(f"Start over.\n```python\n{program}```"), 0.0))
    proposal = proposer_for(endpoint.url).propose([PARENT], random.Random(0))
    assert (proposal.source, proposal.operator) == (program, "llm_rewrite")


@pytest.mark.parametrize("status", [429, 500, 503, 400, 401, 404])
def test_http_errors_are_recorded_as_unusable(endpoint, status):
    endpoint.replies.append((status, b'{"error": "bad model"}', 0.0))
    proposal = proposer_for(endpoint.url).propose([PARENT], random.Random(0))
    assert_unusable(proposal, f"^no answer: .* answered HTTP {status}: .*bad model")
    assert proposal.tokens_in is None and proposal.tokens_out is None


def test_an_answer_over_the_context_window_is_recorded(endpoint):
    """llama.cpp's server answers a prompt past n_ctx with HTTP 400 and this message."""
    message = b'{"error": {"message": "Requested tokens (5000) exceed context window of 4096", "code": 400}}'
    endpoint.replies.append((400, message, 0.0))
    proposal = proposer_for(endpoint.url).propose([PARENT], random.Random(0))
    assert_unusable(proposal, "HTTP 400: .*exceed context window of 4096")


@pytest.mark.parametrize(
    ("payload", "message"),
    [(b"<html>oops</html>", "not JSON"), (b'{"choices": []}', r"without choices\[0\].message.content")],
)
def test_malformed_responses_are_recorded(endpoint, payload, message):
    endpoint.replies.append((200, payload, 0.0))
    assert_unusable(proposer_for(endpoint.url).propose([PARENT], random.Random(0)), message)


@pytest.mark.parametrize(
    ("answer", "finish", "reason"),
    [
        ("I would raise the threshold.", "stop", "^the answer has neither SEARCH/REPLACE blocks"),
        (ANSWER.replace("1.5", "9.9", 1), "stop", "^block 0: SEARCH text not found"),
        (ANSWER.replace("2.5", "1.5"), "stop", "^the answer leaves the program unchanged"),
        (ANSWER.split("=======")[0], "length", r"SEARCH' markers but 0 complete blocks.*\(cut off at max_tokens=64\)$"),
    ],
)
def test_unusable_answers_are_recorded_with_the_raw_answer(endpoint, answer, finish, reason):
    endpoint.replies.append((200, completion(answer, finish), 0.0))
    proposal = proposer_for(endpoint.url, llm_max_tokens=64).propose([PARENT], random.Random(0))
    assert_unusable(proposal, reason, answer)
    assert (proposal.tokens_in, proposal.tokens_out) == (212, 37)
    assert endpoint.requests[0]["body"]["max_tokens"] == 64


def test_a_closed_port_is_transient():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransientProposerError, match="could not get an answer"):
        chat_completion(f"http://127.0.0.1:{port}/v1", {"model": "m"}, api_key=None, timeout_s=2.0)


def test_a_slow_endpoint_times_out_into_a_recorded_failure(endpoint):
    endpoint.replies.append((200, completion(ANSWER), 0.5))
    proposal = proposer_for(endpoint.url, llm_timeout_s=0.1).propose([PARENT], random.Random(0))
    assert_unusable(proposal, "^no answer: could not get an answer from .*timed out")


def test_client_errors_stay_terminal_for_direct_callers(endpoint):
    endpoint.replies.append((401, b'{"error": "bad key"}', 0.0))
    with pytest.raises(TerminalProposerError, match="answered HTTP 401: .*bad key"):
        chat_completion(endpoint.url, {"model": "m"}, api_key=None, timeout_s=2.0)


def test_prompt_templates_ship_with_known_placeholders_only():
    assert string.Template(load_prompt("system.txt")).get_identifiers() == []
    assert set(string.Template(load_prompt("evolve_user.txt")).get_identifiers()) == {
        "task_description",
        "entrypoint",
        "parent_score",
        "parent_source",
        "parent_errors",
        "failure_memory",
    }


def test_cost_note_names_the_answer_and_call_cost_fills_the_candidate_columns():
    call = Proposal("x = 2\n", "llm_diff", ("a",), "llm", "s", answer="A", tokens_in=212, tokens_out=37, latency_s=41.234)
    assert cost_note(call, "file:///s/blobs/ab") == " | answer=file:///s/blobs/ab"
    assert call_cost(call) == {"tokens_in": 212, "tokens_out": 37, "latency_s": 41.234}
    unanswered = Proposal("{}", "llm_unusable", ("a",), "llm", "s", unusable="no answer", answer="", latency_s=0.5)
    assert cost_note(unanswered, "u") == " | answer=u"
    assert call_cost(unanswered) == {"tokens_in": None, "tokens_out": None, "latency_s": 0.5}
    mutated = Proposal("x = 2\n", "constant", ("a",), "mutate", "s")
    assert cost_note(mutated, None) == ""
    assert call_cost(mutated) == call_cost(None) == {"tokens_in": None, "tokens_out": None, "latency_s": None}


def test_the_prompt_names_the_suites_task():
    from suites.registry import get_suite
    from tasks.stages.sample import task_description

    assert task_description(get_suite("circle_packing")) == (
        "Sum of radii of `n` circles in the unit square. The candidate is a Python `construct_packing()` "
        "returning centres and radii; its score is sum_radii (higher is better)."
    )
