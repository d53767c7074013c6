"""Start, wait for and stop llama.cpp's OpenAI-compatible server (``python -m
llama_cpp.server``, the optional ``[llm]`` extra) on a local GGUF model. Used by
``ratchet llm serve`` and by the ``llm`` tests' session fixture.

One thread: on this machine's shared cores, 1 thread generated about 15x faster than 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

N_CTX = 4096


@dataclass(frozen=True)
class Served:
    """A model answering at ``base_url`` (``http://host:port/v1``)."""

    base_url: str
    model: str
    pid: int | None = None


def base_url(host: str, port: int) -> str:
    return f"http://{host}:{port}/v1"


def server_command(model_file: Path, host: str, port: int, *, n_ctx: int = N_CTX, threads: int = 1,
                   python: str = sys.executable) -> list[str]:
    """The command line of the server; the model's alias is the file's stem."""
    return [python, "-m", "llama_cpp.server", "--model", str(model_file), "--model_alias", model_file.stem,
            "--host", host, "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads)]


def served_models(url: str, timeout_s: float = 2.0) -> list[str]:
    """The model ids ``{url}/models`` lists; [] when nothing answers there."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=timeout_s) as response:
            payload = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return []
    return [m.get("id", "") for m in payload.get("data", []) if isinstance(m, dict)]


def start(model_file: Path, host: str = "127.0.0.1", port: int = 8000, *, log: Path | None = None,
          wait_s: float = 120.0, threads: int = 1) -> tuple[subprocess.Popen, Served]:
    """Start a server in its own process group and wait until it lists the model; a
    RuntimeError with the tail of its log when it exits or does not answer in time."""
    url = base_url(host, port)
    if served_models(url):
        raise RuntimeError(f"something already answers at {url}; choose another --port")
    log = log or Path(os.devnull)
    with open(log, "ab") as sink:
        process = subprocess.Popen(server_command(model_file, host, port, threads=threads), stdout=sink,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        models = served_models(url)
        if models:
            return process, Served(url, models[0], process.pid)
        if process.poll() is not None:
            raise RuntimeError(f"the llama.cpp server exited with code {process.returncode}: {_tail(log)}")
        time.sleep(0.5)
    stop(process)
    raise RuntimeError(f"the llama.cpp server did not answer at {url} within {wait_s:.0f} s: {_tail(log)}")


def stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL after ``grace_s``."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _tail(log: Path) -> str:
    if str(log) == os.devnull or not log.exists():
        return "(no log kept)"
    lines = log.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(empty log)"
