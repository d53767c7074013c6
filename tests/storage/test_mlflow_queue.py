"""Queued (background) and direct candidate logs of one tracker: no candidate run is
created twice, and the later values land on the one run."""

from __future__ import annotations

import uuid

import pytest
from mlflow import MlflowClient

from storage.tracking import CANDIDATE_TAG, MlflowTracker

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SADeprecationWarning")


def test_a_candidate_logged_here_and_then_queued_has_one_run_with_both_values(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    tracker = MlflowTracker(uri)
    tracker.start_run(run_id, "loop-w", {})
    tracker.log_candidate(run_id, "a", {"op": "x"}, {"m": 1.0}, {}, background=True)
    tracker.log_candidate(run_id, "b", {"op": "y"}, {"m": 2.0}, {})  # beside the queued "a"
    tracker.log_candidate(run_id, "b", {}, {"m": 2.0, "holdout": 3.0}, {"decision": "accept"}, background=True)
    tracker.log_candidate(run_id, "a", {}, {"m": 1.5}, {}, background=True)
    tracker.finish_run(run_id, "finished")
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("ratchet/loop-w")
    children = [r for r in client.search_runs([experiment.experiment_id]) if CANDIDATE_TAG in r.data.tags]
    by_candidate = {}
    for run in children:
        by_candidate.setdefault(run.data.tags[CANDIDATE_TAG], []).append(run)
    assert sorted((k, len(v)) for k, v in by_candidate.items()) == [("a", 1), ("b", 1)]
    (b,) = by_candidate["b"]
    assert b.data.metrics == {"m": 2.0, "holdout": 3.0} and b.data.tags["decision"] == "accept"
    assert by_candidate["a"][0].data.metrics == {"m": 1.5} and b.data.params == {"op": "y"}
