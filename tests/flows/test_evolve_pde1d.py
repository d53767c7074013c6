"""evolve runs on pde1d from `ratchet run` at a tiny budget: every child is a config
program scored on every select case, the out-of-space ones invalid with their reason."""

import pytest
from typer.testing import CliRunner

from cli.main import app
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_evolve_on_pde1d(prefect_server, tmp_path):
    store = str(tmp_path / "store")
    result = CliRunner().invoke(app, ["run", "evolve", "--suite", "pde1d", "--budget", "2", "--seed", "1",
                                      "--param", "train=4", "--param", "select=4", "--param", "holdout=4",
                                      "--store", store, "--no-tracking"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    s = open_store(store)
    rows = sql(s, "SELECT candidate_id, count(*) AS n, bool_and(valid) AS ok, min(value) AS lo FROM scores "
                  "WHERE split = 'select' AND metric = 'neg_nrmse' GROUP BY 1").to_pylist()
    assert len(rows) == 3 and all(r["n"] == 2 for r in rows)
    assert all(-10.0 <= r["lo"] <= 0.0 for r in rows)
    reasons = [r["reason"] for r in sql(s, "SELECT DISTINCT reason FROM scores WHERE NOT valid").to_pylist()]
    assert all(r.startswith(("config outside the space", "pred holds")) for r in reasons), reasons
    [run_id] = [r["run_id"] for r in sql(s, "SELECT run_id FROM runs_current").to_pylist()]
    assert s.read_rows("registry", run_id)
