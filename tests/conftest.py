"""Test-wide environment: Prefect and MLflow quiet and local, set before either is
imported; one Prefect test server per session for the flow tests."""

import os
import tempfile

_HOME = tempfile.mkdtemp(prefix="ratchet-test-prefect-")
for _key, _value in {
    "PREFECT_HOME": _HOME,
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "OMP_NUM_THREADS": "1",
    "RATCHET_CACHE_DIR": os.path.join(_HOME, "cache"),  # the catalog's view-layout cache, not ~/.cache
}.items():
    os.environ.setdefault(_key, _value)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def prefect_server():
    """A real Prefect server (temporary database) for every flow test of the session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


class ChatEndpoint:
    """A real OpenAI-compatible chat endpoint on 127.0.0.1 that answers each request with
    the next of ``answers`` (the wiring, not a model): ``prompts`` are the last message of
    every request it saw, ``usage`` the token counts it reports."""

    def __init__(self) -> None:
        self.answers: list[str] = []
        self.prompts: list[str] = []
        self.usage = {"prompt_tokens": 10, "completion_tokens": 5}
        self.url = ""


@pytest.fixture
def chat_endpoint(monkeypatch):
    """A ChatEndpoint the llm paths are pointed at (RATCHET_LLM_BASE_URL / _MODEL=tiny-coder)."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    state = ChatEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.prompts.append(request["messages"][-1]["content"])
            message = {"role": "assistant", "content": state.answers.pop(0)}
            body = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                               "usage": state.usage}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    monkeypatch.setenv("RATCHET_LLM_BASE_URL", state.url)
    monkeypatch.setenv("RATCHET_LLM_MODEL", "tiny-coder")
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def gone_endpoint(monkeypatch):
    """RATCHET_LLM_* pointed at a port nothing listens on: every call is refused (the
    endpoint went away), a TransientProposerError the llm paths must record, not raise."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("RATCHET_LLM_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("RATCHET_LLM_MODEL", "gone-model")
    return port
