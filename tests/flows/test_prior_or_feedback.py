"""The prior_or_feedback protocol end to end on the real engine, store and pde1d, at a
tiny size: one condition, one seed, three proposers, 5 trials, decision points 4 and 5."""

import json

import pytest

from flows.prior_or_feedback import prior_or_feedback
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("pof_runs", "pof_trials", "pof_final_test", "pof_replays", "pof_config_space", "gate_decisions")


def small_config() -> RunConfig:
    return RunConfig(loop="prior_or_feedback", suite="pde1d", budget=1, seed=0, tracking=False,
                     suite_params={"train": 6, "select": 4, "holdout": 4, "per_case": 2},
                     prior_or_feedback={"conditions": ["burgers:0.1->burgers:0.02"], "trials": 5, "tpe_startup": 2,
                                        "decision_points": [4, 5], "replays_per_point": 1,
                                        "cold_starts": ["advection:1.0->advection:3.0"], "resamples": 200})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("pof") / "store")
    summary = prior_or_feedback(config=small_config(), store_uri=root, run_id="pof-a")
    return open_store(root), root, summary


def test_every_search_records_its_trials_final_test_and_replays(run):
    store, root, summary = run
    assert counts(store) == {"pof_runs": 3, "pof_trials": 15, "pof_final_test": 3,
                             "pof_replays": 3 * (1 + 2 * 2), "pof_config_space": 6, "gate_decisions": 3}
    rows = sql(store, "SELECT r.proposer, f.chosen_t, f.val_nrmse, min(t.val_nrmse) AS best FROM pof_runs r "
                     "JOIN pof_final_test f USING (run_id, search_id) JOIN pof_trials t USING (run_id, search_id) "
                     "GROUP BY ALL ORDER BY r.proposer").to_pylist()
    assert [r["proposer"] for r in rows] == ["prior", "random", "tpe"]
    assert all(r["val_nrmse"] == r["best"] and 1 <= r["chosen_t"] <= 5 for r in rows)


def test_random_is_blind_to_permuted_scores_and_the_verdict_explains_itself(run):
    store, root, summary = run
    rows = sql(store, "SELECT r.proposer, p.intervention, p.norm_distance FROM pof_replays p JOIN pof_runs r "
                     "USING (run_id, search_id)").to_pylist()
    assert all(r["norm_distance"] == 0 for r in rows if r["proposer"] == "random" and r["intervention"] == "permuted")
    assert all(0 <= r["norm_distance"] <= 1 for r in rows)
    decisions = {d.gate: d for d in store.read_rows("gate_decisions")}
    assert decisions["pof:random"].decision == "reject"
    assert json.loads(decisions["pof:random"].evidence_json)["d_permuted"] == 0
    assert set(summary) == {"run_id", "pof:random", "pof:tpe", "pof:prior"}


def test_rerun_writes_nothing_new(run):
    store, root, summary = run
    before = counts(store)
    prior_or_feedback(config=small_config(), store_uri=root, run_id="pof-a")
    assert counts(store) == before


def test_the_report_reads_the_run_in_sql(run, tmp_path):
    from statistics import fmean

    from cli.report import report_series, write_report
    from tasks.loops.prior_or_feedback.protocol import sensitivity

    store, root, summary = run
    series = report_series(root, "pof-a")["series"]
    runs = {r.search_id: r.proposer for r in store.read_rows("pof_runs")}
    replays = store.read_rows("pof_replays")
    for sid, proposer in runs.items():
        mine = [{"intervention": r.intervention, "norm_distance": r.norm_distance} for r in replays
                if r.search_id == sid]
        assert series.searches[proposer][0]["sensitivity"] == pytest.approx(sensitivity(mine))
    trials = store.read_rows("pof_trials")
    for proposer, curve in series.curves.items():
        (sid,) = [s for s, p in runs.items() if p == proposer]
        values = [r.val_nrmse for r in sorted(trials, key=lambda r: r.t) if r.search_id == sid]
        assert [b for _, b in curve] == pytest.approx([min(values[:t]) for t in range(1, 6)])
    verdict = series.verdicts["random"]
    assert verdict["decision"] == "reject" and verdict["delta"] == pytest.approx(
        fmean(s["sensitivity"] for s in series.searches["random"]))
    path = write_report(root, "pof-a", tmp_path / "pof.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
