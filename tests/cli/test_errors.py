"""A user's mistake is one line and exit code 2, found before any work; a failed run is
one line and exit code 1 with its `failed` event recorded; Ctrl-C records the run as
interrupted and prints the exact `ratchet resume RUN_ID`; a finished run is not resumed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from storage.catalog import sql
from storage.store import open_store

runner = CliRunner()
RATCHET = str(Path(sys.executable).with_name("ratchet"))


def one_line_error(result, code: int = 2) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == (1 if code == 2 else 2), result.stderr  # a failed run adds where to look next
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["run", "nope"], "unknown loop 'nope'; loops: evolve, aide2"),
    (["run", "evolve", "--suite", "nope"], "evolve does not run on suite 'nope'; it runs on: circle_packing"),
    (["run", "grpo", "--suite", "toolsim"], "grpo does not run on suite 'toolsim'; it runs on: arith"),
    (["run", "self_healing", "--suite", "circle_packing"], "self_healing does not run on suite 'circle_packing'"),
    (["run", "evolve", "--suite", "toolsim"], "evolve does not run on suite 'toolsim'"),
    (["run", "evolve", "--set", "bogus.x=1"], "evolve has no section 'bogus'; its sections: evolve, sandbox"),
    (["run", "evolve", "--set", "evolve.nope=1"], "section 'evolve' has no field 'nope'; its fields: islands, "),
    (["run", "evolve", "--set", "evolve.islands=abc"], "evolve.islands: Input should be a valid integer"),
    (["run", "evolve", "--set", "evolve.islands=0"], "evolve.islands: Input should be greater than or equal to 1"),
    (["run", "evolve", "--param", "n=abc"], "circle_packing: n must be an integer >= 1, got 'abc'"),
    (["run", "evolve", "--store", "s3://"], "has no valid bucket name; the store must be a local folder"),
    (["run", "evolve", "--store", "s3:/bucket"], "'s3:/bucket' is not a store; the store must be a local folder"),
    (["run", "evolve", "--store", "ftp://host/x"], "is not a store; the store must be a local folder"),
    (["run", "evolve", "--store", "/etc/hostname"], "is a file, not a folder"),
    (["run", "evolve", "--store", "/etc/hostname/sub"], "cannot be created"),
])
def test_usage_errors_are_one_line_before_any_work(args, message, tmp_path):
    store = [] if "--store" in args else ["--store", str(tmp_path / "store")]
    line = one_line_error(runner.invoke(app, [*args, *store, "--no-tracking"]))
    assert line.startswith("error: ") and message in line
    assert not (tmp_path / "store" / "tables").exists()  # nothing was started


def test_read_commands_refuse_a_store_that_does_not_exist(tmp_path):
    for args in (["runs"], ["show", "x"], ["sql", "SELECT 1"], ["resume", "x"], ["report", "x"], ["check"]):
        line = one_line_error(runner.invoke(app, [*args, "--store", str(tmp_path / "absent")]))
        assert "no store at" in line and "--store" in line
        assert not (tmp_path / "absent").exists()


def test_bad_format_is_a_usage_error(tmp_path):
    result = runner.invoke(app, ["sql", "SELECT 1", "--format", "xml", "--store", str(tmp_path)], terminal_width=200)
    words = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and "'xml' is not one of 'table', 'csv', 'json'" in words


def test_resume_of_an_unknown_run_names_the_fix(tmp_path):
    (tmp_path / "tables").mkdir()
    line = one_line_error(runner.invoke(app, ["resume", "no-such-run", "--store", str(tmp_path)]))
    assert "no run 'no-such-run'" in line and "ratchet runs" in line


def test_loops_and_suites_teach_what_runs_on_what():
    loops = runner.invoke(app, ["loops"])
    assert loops.exit_code == 0
    assert "suites: circle_packing | bin_packing | lasso | spin" in " ".join(loops.output.split())
    assert "--budget: optimizer steps (default 30)" in loops.output and "harness_bandit" in loops.output
    assert "(default 64)\n                 budget caps: --max-evaluations N, --max-llm-tokens N" in loops.output
    assert "--budget: optimizer steps (default 30)\n                 --set" in loops.output  # grpo checks no caps
    suites = runner.invoke(app, ["suites"])
    assert suites.exit_code == 0
    assert "bin_packing  (train 43, select 21, holdout 21)" in suites.output
    assert "toolsim  (train 64, select 24, holdout 24, protected 24, test 24)" in suites.output
    assert "2.6359830849" in suites.output
    assert "lasso  (train 6, select 6, holdout 6)  loops: evolve" in suites.output


def test_help_keeps_brackets():
    # Rich sizes help from COLUMNS (terminal_width does not reach it); at 80 the cell is cut with an ellipsis
    assert "grpo.categories=[add,sub]" in runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output


@pytest.mark.integration
def test_failure_while_starting_is_recorded_and_resumable(prefect_server, tmp_path, monkeypatch):
    store = str(tmp_path / "store")
    monkeypatch.setenv("RATCHET_FAIL_AT", "start:cases")
    args = ["run", "evolve", "--budget", "2", "--store", store, "--no-tracking"]
    result = runner.invoke(app, args)
    line = one_line_error(result, code=1)
    assert "failed: InjectedFailure: failure injected at start:cases" in line
    assert "once the cause is fixed, `ratchet resume evolve-" in result.stderr
    [row] = sql(open_store(store), "SELECT run_id, status, error FROM runs_current").to_pylist()
    assert row["status"] == "failed" and row["error"].startswith("InjectedFailure: failure injected")
    monkeypatch.delenv("RATCHET_FAIL_AT")
    assert runner.invoke(app, ["resume", row["run_id"], "--store", store]).exit_code == 0
    assert sql(open_store(store), "SELECT status FROM runs_current").to_pylist() == [{"status": "finished"}]
    again = runner.invoke(app, ["resume", row["run_id"], "--store", store])
    assert again.exit_code == 0 and "finished at" in again.output and "nothing to resume" in " ".join(again.output.split())


@pytest.mark.integration
@pytest.mark.slow
def test_ctrl_c_records_the_run_and_prints_the_resume_command(tmp_path):
    store = tmp_path / "store"
    process = subprocess.Popen([RATCHET, "run", "evolve", "--budget", "64", "--store", str(store), "--no-tracking"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "COLUMNS": "200"})
    deadline = time.monotonic() + 240
    while not list(store.glob("tables/executions/*/*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    [run_id] = [p.name.removeprefix("run_id=") for p in (store / "tables" / "runs").iterdir()]
    assert process.returncode == 130, out + err
    assert f"finish it with:  ratchet resume {run_id}" in err and "Traceback" not in err
    [row] = sql(open_store(str(store)), "SELECT status, error FROM runs_current").to_pylist()
    assert row == {"status": "failed", "error": "interrupted (Ctrl-C or SIGINT)"}


@pytest.mark.integration
def test_a_run_that_mostly_timed_out_says_what_to_raise(prefect_server, tmp_path):
    store = str(tmp_path / "store")
    result = runner.invoke(app, ["run", "evolve", "--budget", "2", "--timeout", "0.001", "--store", store,
                                 "--no-tracking"], terminal_width=300)
    assert result.exit_code == 0, result.output
    [row] = sql(open_store(store), "SELECT count(*) FILTER (WHERE status = 'timeout') AS t, count(*) AS n "
                                  "FROM executions").to_pylist()
    assert row["t"] / row["n"] > 0.10
    words = " ".join(result.output.split())
    assert f"warning: {row['t']} of {row['n']} executions" in words and "raise it with --timeout SECONDS" in words
    [run_id] = {r.run_id for r in open_store(store).read_rows("runs")}
    shown = runner.invoke(app, ["show", run_id, "--store", store], terminal_width=300)
    assert "timed out at the sandbox's limit of 0.001 s of CPU per case" in " ".join(shown.output.split())


def test_no_bubblewrap_is_refused_before_any_work(tmp_path, monkeypatch):
    import shutil

    from suites.executors import sandbox

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("unshare", "true"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("RATCHET_SANDBOX_ISOLATION", raising=False)
    sandbox._probe.cache_clear()
    try:
        result = runner.invoke(app, ["run", "evolve", "--store", str(tmp_path / "s")])
    finally:
        sandbox._probe.cache_clear()
    line = one_line_error(result)
    assert line.startswith("error: no bubblewrap sandbox here (bwrap is not on PATH")
    assert "RATCHET_SANDBOX_ISOLATION=unshare" in line
    assert not (tmp_path / "s" / "tables").exists()  # nothing ran


@pytest.mark.skipif(not __import__("shutil").which("docker"), reason="no docker CLI on PATH (Debian package docker.io)")
def test_the_docker_executor_without_an_engine_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    result = runner.invoke(app, ["run", "evolve", "--store", str(tmp_path / "s"), "--set", "sandbox.kind=docker"])
    line = one_line_error(result)
    assert line.startswith(f"error: no Docker engine answers at unix://{tmp_path}/no-engine.sock (")
    assert "infra/dockerd.sh" in line and "--set sandbox.kind=subprocess" in line
    assert not (tmp_path / "s" / "tables").exists()  # nothing ran
