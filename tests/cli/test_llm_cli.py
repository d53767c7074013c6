"""`ratchet llm`: one-line errors and what `status` says when nothing serves (the served
model itself is tested in tests/llm/, marked llm)."""

import socket

from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unknown_model_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("RATCHET_CACHE_DIR", str(tmp_path))
    for args in (["llm", "fetch", "llama-70b"], ["llm", "serve", "--model", "llama-70b"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: unknown model 'llama-70b'; choose one of: ")


def test_serving_an_unfetched_model_says_how_to_fetch_it(tmp_path, monkeypatch):
    monkeypatch.setenv("RATCHET_CACHE_DIR", str(tmp_path))
    result = runner.invoke(app, ["llm", "serve", "--model", "qwen2.5-coder-0.5b"])
    assert result.exit_code == 2
    assert result.output.strip().endswith("not fetched yet; run: ratchet llm fetch qwen2.5-coder-0.5b") or \
        "llama-cpp-python is not installed" in result.output


def test_status_says_nothing_serves(tmp_path, monkeypatch):
    monkeypatch.setenv("RATCHET_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RATCHET_LLM_BASE_URL", raising=False)
    result = runner.invoke(app, ["llm", "status"])
    assert result.exit_code == 1 and result.output.startswith("nothing serves: no `ratchet llm serve` started here")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = runner.invoke(app, ["llm", "status", "--url", url])
    assert result.exit_code == 1 and result.output.strip() == f"nothing answers at {url}"
