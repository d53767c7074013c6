"""The arenaflow loop end to end on the real engine, store and toolsim, at a tiny size:
2 rounds of 4 requests, groups of 4."""

import hashlib
import json

import pytest

from flows.arenaflow import arenaflow
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "train_steps", "gate_decisions", "registry", "af_trajectories", "af_matches", "af_key_steps",
          "af_skill_usage", "af_skills")


def small_config() -> RunConfig:
    return RunConfig(loop="arenaflow", suite="toolsim", budget=2, seed=0, tracking=False,
                     suite_params={"instances_per_template": 5},
                     arenaflow={"group_size": 4, "batch": 4, "min_obs": 1})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("arenaflow") / "store")
    summary = arenaflow(config=small_config(), store_uri=root, run_id="af-a")
    return open_store(root), root, summary


def test_tables_hold_one_tournament_per_request(run):
    store, root, summary = run
    trajs, matches = store.read_rows("af_trajectories"), store.read_rows("af_matches")
    assert len(trajs) == 2 * 4 * 4 and len(matches) == 2 * 4 * 3  # G - 1 matches per request
    by_req = {}
    for t in trajs:
        by_req.setdefault((t.round, t.req_id), []).append(t)
    for group in by_req.values():
        assert abs(sum(t.advantage for t in group)) < 1e-6
        assert sorted(t.score for t in group) == [1, 1, 2, 3]
    got = sql(open_store(root), "SELECT count(*) AS n FROM af_key_steps WHERE survival_depth < 1").to_pylist()
    assert got == [{"n": 0}]
    assert len(store.read_rows("train_steps")) == 2


def test_checkpoints_are_content_ids_and_gate_explains_itself(run):
    store, _, summary = run
    for c in store.read_rows("candidates"):
        assert hashlib.sha256(store.get_blob(c.candidate_id)).hexdigest() == c.candidate_id
    decisions = store.read_rows("gate_decisions")
    policy = [d for d in decisions if d.gate == "af_policy"]
    assert len(policy) == 1 and policy[0].n_cases > 0
    for d in decisions:
        if d.gate == "af_skill":
            evidence = json.loads(d.evidence_json)
            assert d.decision == "accept" or evidence["utility"] < 0 <= evidence["n_obs"] - evidence["min_obs"]
    registry = store.read_rows("registry")
    assert (len(registry) == 1) == (policy[0].decision == "accept") == summary["registered"]


def test_rerun_writes_nothing_new(run):
    store, root, summary = run
    before = counts(store)
    again = arenaflow(config=small_config(), store_uri=root, run_id="af-a")
    assert counts(open_store(root)) == before
    assert again["candidate_id"] == summary["candidate_id"]


def test_report_plots_rounds_and_skill_decisions(run, tmp_path):
    from cli.report import report_series, write_report

    _, root, _ = run
    report = report_series(root, "af-a")
    assert report["family"] == "arenaflow"
    assert [r["round"] for r in report["series"].rounds] == [1, 2]
    assert report["series"].policy.startswith(("accept", "reject"))
    assert write_report(root, "af-a", tmp_path / "af.png").stat().st_size > 0
