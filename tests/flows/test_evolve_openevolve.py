"""evolve runs an OpenEvolve-format problem unchanged from `ratchet run`: every child
keeps the text outside its EVOLVE-BLOCK, every metric the evaluator returns is a score
row, and the champion has no holdout score (the format has no held-out split)."""

import pytest
from typer.testing import CliRunner

from cli.main import app
from storage.catalog import sql
from storage.store import open_store
from suites.blocks import outside_block
from suites.openevolve import OpenEvolve

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_evolve_on_the_example_problem(prefect_server, tmp_path):
    store = str(tmp_path / "store")
    result = CliRunner().invoke(app, ["run", "evolve", "--suite", "openevolve", "--budget", "8", "--store", store,
                                      "--no-tracking"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    s = open_store(store)
    [run_id] = [r["run_id"] for r in sql(s, "SELECT run_id FROM runs_current").to_pylist()]
    seed = OpenEvolve().seed_program()
    children = s.read_rows("candidates", run_id)
    assert len(children) == 9
    assert all(outside_block(s.get_blob(c.candidate_id).decode()) == outside_block(seed) for c in children)
    metrics = {r["metric"]: r["n"] for r in sql(s, "SELECT metric, count(*) AS n FROM scores WHERE valid "
                                                   "GROUP BY 1").to_pylist()}
    assert set(metrics) == {"combined_score", "mse", "valid"} and len(set(metrics.values())) == 1
    [champion] = [r for r in s.read_rows("registry", run_id) if r.version == max(x.version for x in s.read_rows(
        "registry", run_id))]
    assert champion.holdout_score is None and champion.select_score >= 0.9022
