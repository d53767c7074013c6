"""A real evolve run loses one executions part (truncated on disk): the other tables
stay queryable, `ratchet check` names the part, `--quarantine` moves it aside and marks
the run damaged, and `ratchet resume` re-derives exactly the rows that were lost."""

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import cli.main
from cli.main import app
from schemas.tables import TABLES
from storage import fs as storefs
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]
runner = CliRunner()

TIMING = {"wall_s", "cpu_s", "peak_rss_mb"}


def executions(store) -> list[dict]:
    """Every execution row without its timing columns, in a stable order."""
    rows = [{k: v for k, v in r.model_dump().items() if k not in TIMING}
            for r in open_store(str(store)).read_rows("executions")]
    return sorted(rows, key=lambda r: r["execution_id"])


def tables(store) -> dict[str, list]:
    s = open_store(str(store))
    return {
        "candidates": sorted((r.round, r.candidate_id, r.operator, tuple(r.parent_ids)) for r in s.read_rows("candidates")),
        "scores": sorted((r.execution_id, r.metric, r.value) for r in s.read_rows("scores")),
        "gate": sorted((r.round, r.candidate_id, r.decision) for r in s.read_rows("gate_decisions")),
        "registry": sorted((r.version, r.candidate_id, r.holdout_score) for r in s.read_rows("registry")),
    }


def ratchet(*args):
    return runner.invoke(app, [*map(str, args)])


@pytest.fixture
def wide_console(monkeypatch):
    """Rich tables at 80 columns fold part names; the commands print to cli.main.console."""
    monkeypatch.setattr(cli.main, "console", Console(width=250))


def test_a_truncated_part_is_found_quarantined_and_re_derived(prefect_server, tmp_path, wide_console):
    store = tmp_path / "store"
    done = ratchet("run", "evolve", "--suite", "circle_packing", "--budget", 4, "--seed", 3, "--store", store,
                   "--no-tracking")
    assert done.exit_code == 0, done.output
    (run_id,) = {r.run_id for r in open_store(str(store)).read_rows("runs")}
    untouched_executions, untouched = executions(store), tables(store)

    # Damage one part of round 1, as a crashed disk or a partial copy would.
    parts = sorted(open_store(str(store)).part_files("executions", run_id))
    damaged = next(p for p in parts if "/execute-r0001-" in p)
    name = damaged.rsplit("/", 1)[-1]
    data = Path(damaged).read_bytes()
    Path(damaged).write_bytes(data[: len(data) // 3])

    # Every other table still answers; the damaged one names its part and the fix.
    counted = ratchet("sql", "SELECT count(*) AS n FROM runs", "--store", store, "--format", "json")
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout) == [{"n": 2}]
    broken = ratchet("sql", "SELECT count(*) FROM executions", "--store", store)
    assert broken.exit_code == 1
    assert name in broken.output and "ratchet check --quarantine" in broken.output and run_id in broken.output
    shown = ratchet("show", run_id, "--store", store)
    assert shown.exit_code == 1 and "finished" in shown.output and "champions" in shown.output
    assert "executions: cannot be read" in shown.output

    # check: a table of the damaged part (table, run, stage, part), exit status 1.
    found = ratchet("check", "--store", store)
    assert found.exit_code == 1, found.output
    line = next(row for row in found.stdout.splitlines() if name in row)
    assert all(word in line for word in ("executions", run_id, "execute", name)), line
    assert f"1 of {sum(len(open_store(str(store)).part_files(t)) for t in TABLES)} parts" in found.stdout
    assert "--quarantine" in found.stdout

    # --quarantine: moved aside with a note, the run is marked damaged, queries work.
    moved = ratchet("check", run_id, "--quarantine", "--store", store)
    assert moved.exit_code == 0, moved.output
    target = store / "quarantine" / "executions" / f"run_id={run_id}" / name
    assert target.is_file() and not Path(damaged).exists()
    assert json.loads(target.with_name(name + ".json").read_text())["stage"] == "execute"
    clean = ratchet("check", "--store", store)
    assert clean.exit_code == 0 and clean.stdout.startswith("OK: ")
    status = ratchet("sql", f"SELECT status, error FROM runs_current WHERE run_id = '{run_id}'", "--store", store,
                     "--format", "json")
    (current,) = json.loads(status.stdout)
    assert current["status"] == "damaged" and name in current["error"]
    assert len(executions(store)) < len(untouched_executions)

    # resume re-runs the lost candidate only: the same rows as before, the run finished.
    resumed = ratchet("resume", run_id, "--store", store)
    assert resumed.exit_code == 0, resumed.output
    assert storefs.exists(open_store(str(store)).location, damaged)
    assert executions(store) == untouched_executions
    assert tables(store) == untouched
    final = ratchet("sql", f"SELECT status FROM runs_current WHERE run_id = '{run_id}'", "--store", store,
                    "--format", "json")
    assert json.loads(final.stdout) == [{"status": "finished"}]
    assert ratchet("check", run_id, "--store", store).exit_code == 0
