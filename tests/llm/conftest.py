"""One real llama.cpp server on the pinned 0.5B model for the whole `llm` run (`make
test-llm`: the [llm] extra installed and the model fetched). The tests here are marked
`llm` and left out of `make test`. tests/conftest.py points RATCHET_CACHE_DIR at a
temporary folder, so the model is looked for where `make llm` put it too."""

import os
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
