"""The modular_rsi modifier behind `proposer: llm`, against a local OpenAI-compatible
stub (the wiring, not a model): the prompt carries the module's scope, the finding, the
failures and the history; an answer is an edit only if its harness parses and changes
something, and the static gate still rejects one that leaves its module."""

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from schemas.configs import EvolveConfig
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.llm_edit import NoLLMEdit
from tasks.loops.modular_rsi.contrast import Finding
from tasks.loops.modular_rsi.evolve import gate_static
from tasks.loops.modular_rsi.llm import OPERATOR, llm_modify
from tasks.proposers.rule_evidence import Trace

RETRY = {"id": "retry", "trigger": {"on_error": "rate_limited", "tool": "*"}, "action": {"retry": {"max": 2}}}
PAGE = {"id": "page", "trigger": {"before": "list_orders"}, "action": {"paginate": {"max_pages": 5}}}
BASE = {"version": 1, "rules": [RETRY], "skills": []}
FINDING = Finding("observation", "unread_page", ("change_address", "open_ticket"))
TRACES = [Trace("change_address/000", "change_address", (), False), Trace("open_ticket/001", "open_ticket", (), True)]


@pytest.fixture
def endpoint(monkeypatch):
    answers, prompts = [], []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompts.append(request["messages"][-1]["content"])
            body = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                                                                     "content": answers.pop(0)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    monkeypatch.setenv("RATCHET_LLM_BASE_URL", f"http://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("RATCHET_LLM_MODEL", "tiny-coder")
    yield answers, prompts
    server.shutdown()
    server.server_close()


def write(document, endpoint):
    endpoint[0].append(f"An edit.\n```python\n{harness_source(document)}```\n")
    return llm_modify(BASE, FINDING, TRACES, ["round 1: {} -> rejected"], EvolveConfig(), random.Random(0))


def test_an_answer_editing_the_module_is_an_edit_and_the_prompt_holds_the_evidence(endpoint):
    edit = write({**BASE, "rules": [RETRY, PAGE]}, endpoint)
    assert edit.module == "observation" and edit.operator == OPERATOR and edit.document["rules"] == [RETRY, PAGE]
    assert json.loads(edit.diff) == {"observation": {"added": [PAGE], "removed": []}}
    assert gate_static(edit, BASE)[0]
    prompt = endpoint[1][0]
    assert "ONLY the `observation` module" in prompt and "paginate rules" in prompt
    assert "change_address/000" in prompt and "open_ticket/001" not in prompt  # failures only
    assert "unread_page recurs in 2 tasks" in prompt and "round 1: {} -> rejected" in prompt


def test_an_answer_leaving_its_module_is_caught_by_the_static_gate(endpoint):
    edit = write({**BASE, "rules": [PAGE]}, endpoint)  # also drops the tool wrapper's retry
    assert gate_static(edit, BASE) == (False, "touches modules ['observation', 'tool_wrapper'], not only observation")


@pytest.mark.parametrize("document, reason", [
    ({**BASE, "rules": [dict(RETRY, id="renamed")]}, "changes no module"),  # a rename is no edit
    ({**BASE, "rules": [dict(RETRY, action={"retry": {"max": 9}})]}, "not a valid harness"),
])
def test_an_answer_that_is_no_edit_raises_with_the_call(endpoint, document, reason):
    with pytest.raises(NoLLMEdit, match=reason) as raised:
        write(document, endpoint)
    assert raised.value.proposal.answer.startswith("An edit.")


def test_the_real_models_prose_answer_is_no_edit_that_keeps_its_call(chat_endpoint):
    """The served 0.5B model answered one sentence of prose to a tool_wrapper finding: no
    edit, and the refusal carries the call (raw answer, tokens) the round records as an
    ``llm_unusable`` candidate."""
    answer = "SEARCH/REPLACE\ntool_wrapper/tool_error should be renamed to tool_error_retry or switch_tool_retry."
    chat_endpoint.answers.append(answer)
    with pytest.raises(NoLLMEdit) as refused:
        llm_modify(BASE, Finding("tool_wrapper", "tool_error", ("change_address",)), TRACES, [], EvolveConfig(),
                   random.Random(0))
    call = refused.value.proposal
    assert refused.value.asked and (call.answer, call.tokens_in, call.tokens_out) == (answer, 10, 5)
