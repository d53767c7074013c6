"""One real llama.cpp server on the pinned 0.5B model for the whole `llm` run (`make
test-llm`: the [llm] extra installed and the model fetched). The tests here are marked
`llm` and left out of `make test`. tests/conftest.py points RATCHET_CACHE_DIR at a
temporary folder, so the model is looked for where `make llm` put it too."""

import json
import os
import re
import socket
from pathlib import Path

import pytest

from tasks.proposers import llama_server
from tasks.proposers.local_models import DEFAULT_MODEL, MODELS, cache_dir, resolve_model_file


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def model_dir() -> Path:
    """The first of the test environment's model folder and the user's own that holds the model."""
    folders = [cache_dir(), cache_dir({k: v for k, v in os.environ.items() if k != "RATCHET_CACHE_DIR"})]
    return next((f for f in folders if (f / MODELS[DEFAULT_MODEL].filename).exists()), folders[0])


class SessionServer:
    """The session's server; a test may stop it (a server that goes away) and start it
    again on the same port, so the exported URL stays right."""

    def __init__(self, model_file: Path, log: Path) -> None:
        self.model_file, self.log, self.port = model_file, log, free_port()
        self.start()

    def start(self) -> None:
        self.process, self.served = llama_server.start(self.model_file, port=self.port, log=self.log)

    def stop(self) -> None:
        llama_server.stop(self.process)


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """The served model; its exports are set for the session and removed afterwards."""
    try:
        import llama_cpp  # noqa: F401
        model_file = resolve_model_file(DEFAULT_MODEL, model_dir())
    except (ImportError, ValueError) as exc:
        pytest.fail(f"the llm tests need `make llm` first: {exc}")
    server = SessionServer(Path(model_file), tmp_path_factory.mktemp("llm") / "server.log")
    saved = {k: os.environ.get(k) for k in ("RATCHET_LLM_BASE_URL", "RATCHET_LLM_MODEL")}
    os.environ.update(RATCHET_LLM_BASE_URL=server.served.base_url, RATCHET_LLM_MODEL=server.served.model)
    yield server
    server.stop()
    for key, value in saved.items():
        os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


MAX_TOKENS = 192
"""Answers are capped so the whole llm set stays under 10 minutes on 1 CPU thread."""
ANSWER = re.compile(r" \| answer=(\S+)$")


class Recorded:
    """What every llm-written candidate must carry, checked on a run's stored rows."""

    max_tokens = MAX_TOKENS

    @staticmethod
    def call(store, candidate) -> tuple[int, int, float]:
        """The candidate's columns hold its call's cost; its summary names the blob of the raw answer."""
        match = ANSWER.search(candidate.summary)
        assert match, candidate.summary
        tokens_in, tokens_out, latency = candidate.tokens_in, candidate.tokens_out, candidate.latency_s
        assert tokens_in > 50 and 0 < tokens_out <= MAX_TOKENS and latency > 0
        assert store.get_blob(match[1].rsplit("/", 1)[-1]).decode() is not None
        return tokens_in, tokens_out, latency

    @classmethod
    def llm_rows(cls, store, run_id: str) -> list:
        """The run's llm-written candidates by round, each checked: an unusable answer is an
        `llm_unusable` / `llm_answer` row whose blob says why and keeps the raw answer, never
        executed; a usable one is an executed artifact; both carry the call's cost."""
        executed = {e.candidate_id for e in store.read_rows("executions", run_id)}
        written = sorted((c for c in store.read_rows("candidates", run_id) if c.proposer == "llm"),
                         key=lambda c: c.round)
        for c in written:
            cls.call(store, c)
            if c.operator == "llm_unusable":
                record = json.loads(store.get_blob(c.candidate_id))
                assert c.artifact_kind == "llm_answer" and c.candidate_id not in executed
                assert record["reason"] and record["answer"] is not None
            else:
                assert c.artifact_kind != "llm_answer" and c.candidate_id in executed, c
        return written

    @staticmethod
    def finished(store, run_id: str) -> bool:
        return max(store.read_rows("runs", run_id), key=lambda r: r.event_at).status == "finished"


@pytest.fixture(scope="session")
def recorded() -> type[Recorded]:
    return Recorded
