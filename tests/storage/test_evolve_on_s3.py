"""The whole evolve loop on an S3 store (a real moto S3 server on 127.0.0.1): parts,
blobs and DuckDB's httpfs views all go through the S3 protocol."""

import uuid

import pytest

from flows.evolve import evolve
from schemas.configs import EvolveConfig, RunConfig
from storage.catalog import sql
from storage.store import open_store

from .conftest import BUCKET

pytestmark = [pytest.mark.integration]


def test_evolve_runs_and_answers_sql_on_s3(prefect_server, s3_env):
    uri = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    config = RunConfig(loop="evolve", suite="circle_packing", budget=3, seed=5, tracking=False,
                       evolve=EvolveConfig(children_per_round=3))
    summary = evolve(config=config, store_uri=uri, run_id="on-s3")
    store = open_store(uri)
    candidates = store.read_rows("candidates", "on-s3")
    assert len(candidates) == 4 and all(c.artifact_uri.startswith("s3://") for c in candidates)
    counts = sql(store, "SELECT count(*) AS n, count(DISTINCT candidate_id) AS c FROM executions "
                        "WHERE split IN ('train', 'select')").to_pylist()[0]
    assert counts == {"n": 8, "c": 4}
    assert summary["holdout_score"] > 0
