"""`--dask`: the execute stage fans candidates out as futures on a real Dask cluster."""

import pytest

from flows.evolve import evolve
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_evolve_on_a_local_dask_cluster_matches_the_threaded_run(prefect_server, tmp_path):
    from distributed import LocalCluster

    def config(address=None):
        return RunConfig(loop="evolve", suite="circle_packing", budget=4, seed=2, tracking=False,
                         dask_address=address, evolve=EvolveConfig(children_per_round=2))

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        evolve(config=config(cluster.scheduler_address), store_uri=str(tmp_path / "dask"), run_id="on-dask")
        prefixes = set(cluster.scheduler.task_prefixes)
    evolve(config=config(), store_uri=str(tmp_path / "threads"), run_id="on-threads")
    on_dask, on_threads = open_store(str(tmp_path / "dask")), open_store(str(tmp_path / "threads"))

    def rows(store, table, *columns):
        return sorted(tuple(getattr(r, c) for c in columns) for r in store.read_rows(table))

    assert "evaluate_program" in prefixes
    assert rows(on_dask, "executions", "candidate_id", "case_id", "status") == \
        rows(on_threads, "executions", "candidate_id", "case_id", "status")
    assert rows(on_dask, "gate_decisions", "candidate_id", "decision") == \
        rows(on_threads, "gate_decisions", "candidate_id", "decision")
