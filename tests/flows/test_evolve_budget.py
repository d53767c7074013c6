"""Budget caps through the real CLI, engine, store and sandbox: a run stopped by
`--max-evaluations` ends `budget_exhausted` with its champion registered, `ratchet resume
--max-evaluations` raises the cap and continues it, and the rows are those of a run
started with the raised cap (benchmarks/fault_kit.py's canonical form)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]
runner = CliRunner()
RUN = ["run", "evolve", "--suite", "circle_packing", "--budget", "6", "--seed", "5", "--workers", "2",
       "--set", "evolve.children_per_round=2", "--set", "evolve.islands=1", "--no-tracking"]
"""Rounds 0-3: the seed, then 2 children a round; circle_packing has 1 train, 1 select and
1 holdout case, so a round makes 2 evaluations per child plus 1 per registered champion."""
KIT = Path(__file__).resolve().parents[2] / "benchmarks" / "fault_kit.py"


@pytest.fixture(scope="module")
def kit():
    spec = importlib.util.spec_from_file_location("benchmark_fault_kit_budget", KIT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def ratchet(*args: str):
    return runner.invoke(app, list(args), terminal_width=400)


def only_run(store: Path) -> str:
    (run_id,) = {r.run_id for r in open_store(str(store)).read_rows("runs")}
    return run_id


def ledger(store: Path, run_id: str) -> dict:
    (row,) = sql(open_store(str(store)), f"SELECT * FROM ledger WHERE run_id = '{run_id}'").to_pylist()
    return row


def test_a_capped_run_stops_and_a_raised_cap_continues_it_to_the_rows_of_the_higher_cap(prefect_server, tmp_path, kit):
    capped = tmp_path / "capped"
    result = ratchet(*RUN, "--store", str(capped), "--max-evaluations", "4")
    assert result.exit_code == 0, result.output
    run_id = only_run(capped)
    store = open_store(str(capped))
    # the seed's 3 evaluations (< 4) admit round 1; its 4+ evaluations stop the run before round 2
    assert {c.round for c in store.read_rows("candidates", run_id)} == {0, 1}
    spent = ledger(capped, run_id)
    holdout = sum(1 for e in store.read_rows("executions", run_id) if e.split == "holdout")
    assert spent["evaluations"] == 2 * 3 + holdout and spent["status"] == "budget_exhausted"
    assert spent["llm_calls"] == 0 and spent["tokens_in"] == 0 and spent["sandbox_cpu_s"] > 0
    reason = f"budget cap reached: {spent['evaluations']} evaluations of max_evaluations=4, before round 2"
    assert f"run {run_id} stopped: {reason}" in result.output
    latest = max(store.read_rows("runs", run_id), key=lambda r: r.event_at)
    assert (latest.status, latest.error) == ("budget_exhausted", reason) and latest.finished_at is not None
    assert store.read_rows("registry", run_id), "the champion so far is registered"
    shown = ratchet("show", run_id, "--store", str(capped))
    assert shown.exit_code == 0 and "ledger" in shown.output  # (the 80-column console folds the status cell)

    again = ratchet("resume", run_id, "--store", str(capped))
    assert again.exit_code == 0 and "continue it with a raised cap" in again.output
    assert len(store.read_rows("runs", run_id)) == 2  # nothing ran: no resume event
    lower = ratchet("resume", run_id, "--store", str(capped), "--max-evaluations", "4")
    assert lower.exit_code == 2 and "does not raise run" in lower.output and "cap of 4" in lower.output
    absent = ratchet("resume", run_id, "--store", str(capped), "--max-llm-tokens", "9")
    assert absent.exit_code == 2 and f"run {run_id} has no max_llm_tokens cap" in absent.output

    raised = spent["evaluations"] + 1  # admits round 2 only
    resumed = ratchet("resume", run_id, "--store", str(capped), "--max-evaluations", str(raised))
    assert resumed.exit_code == 0, resumed.output
    assert {c.round for c in store.read_rows("candidates", run_id)} == {0, 1, 2}
    events = sorted(store.read_rows("runs", run_id), key=lambda r: r.event_at)
    assert [e.status for e in events] == ["running", "budget_exhausted", "running", "budget_exhausted"]
    assert json.loads(events[2].config_json)["config"]["max_evaluations"] == raised
    assert json.loads(events[0].config_json)["config"]["max_evaluations"] == 4  # the start is as it was
    assert "continue it with a raised cap" in ratchet("resume", run_id, "--store", str(capped)).output

    direct = tmp_path / "direct"
    result = ratchet(*RUN, "--store", str(direct), "--max-evaluations", str(raised))
    assert result.exit_code == 0, result.output
    expected = kit.snapshot(str(direct), only_run(direct))
    assert kit.differences(expected, kit.snapshot(str(capped), run_id)) == {}
    assert ledger(direct, only_run(direct))["evaluations"] == ledger(capped, run_id)["evaluations"]
