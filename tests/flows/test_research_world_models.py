"""research_world_models runs for real from `ratchet run` on lasso at a tiny size: the
archive's records are the sandboxed scores' gains over the seed, every selection is
re-derivable from the records with the pure selection functions, no predictor context
holds the proposal's near-duplicate group, the holdout datasets are never a record's
environment, the gate rows are the paired comparisons, a rerun adds nothing."""

import json
from statistics import fmean

import pytest
from typer.testing import CliRunner

from cli.main import app
from flows.research_world_models import research_world_models
from storage.catalog import sql
from storage.store import open_store
from tasks.loops.research_world_models.selection import PREDICTORS, selection_round
from tasks.loops.research_world_models.stages import as_record
from tasks.runtime.lifecycle import stored_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]
runner = CliRunner()
ARGS = ["--budget", "2", "--no-tracking", "--param", "repeats=1", "--set", "research_world_models.interventions=5",
        "--set", "research_world_models.proposals=4", "--set", "research_world_models.choose=2"]


@pytest.fixture(scope="module")
def finished(prefect_server, tmp_path_factory):
    store = str(tmp_path_factory.mktemp("rwm") / "store")
    result = runner.invoke(app, ["run", "research_world_models", "--store", store, *ARGS])
    assert result.exit_code == 0, result.output + repr(result.exception)
    [run_id] = [r["run_id"] for r in sql(open_store(store), "SELECT run_id FROM runs_current").to_pylist()]
    return store, run_id


def distillates(store: str, run_id: str, kind: str) -> list[dict]:
    rows = open_store(store).read_rows("distillates", run_id)
    return [json.loads(d.content) for d in rows if d.kind == kind]


def test_records_are_the_measured_gains_over_the_seed(finished):
    store, run_id = finished
    s = open_store(store)
    records = distillates(store, run_id, "rwm_record")
    scores = [r for r in s.read_rows("scores", run_id) if r.metric == "neg_log10_cpu_ms"]
    seed = next(c.candidate_id for c in s.read_rows("candidates", run_id) if c.operator == "seed")
    holdout_envs = {r.case_id.split("/")[0] for r in scores if r.split == "holdout"}
    assert len(records) == 5 * 4 and not holdout_envs & {r["env_id"] for r in records}
    for record in records:
        def mean(cid):
            return fmean(r.value for r in scores if r.candidate_id == cid and r.split != "holdout"
                         and r.case_id.split("/")[0] == record["env_id"])
        assert record["gain"] == pytest.approx(mean(record["candidate_id"]) - mean(seed))


def test_every_selection_is_rederived_from_the_records(finished):
    store, run_id = finished
    archive = [as_record(r) for r in distillates(store, run_id, "rwm_record")]
    by_id = {r.record_id: r for r in archive}
    selections = distillates(store, run_id, "rwm_selection")
    assert len(selections) == 2 * 4 * 2 * 3  # rounds x environments x settings x predictors
    for s in selections:
        proposals = [by_id[i] for i in s["proposals"]]
        regret, ndcg, predicted = selection_round(archive, proposals, PREDICTORS[s["predictor"]],
                                                  s["setting"] == "cross", 2)
        assert (regret, ndcg) == pytest.approx((s["regret"], s["ndcg"]))
        assert predicted == pytest.approx(s["predicted"])
        assert s["realized"] == [p.gain for p in proposals] and len(s["chosen"]) == 2
    same = {(s["round"], s["env"]): s["proposals"] for s in selections if s["setting"] == "same"}
    assert all(same[(s["round"], s["env"])] == s["proposals"] for s in selections)  # paired draws


def test_gate_rows_compare_with_the_prior_and_a_rerun_adds_nothing(finished):
    store, run_id = finished
    s = open_store(store)
    metrics = distillates(store, run_id, "rwm_metric")
    gates = s.read_rows("gate_decisions", run_id)
    assert sorted((g.gate, g.candidate_id) for g in gates) == sorted(
        ("rwm_predictor", f"predictor:{p}") for p in ("knn", "ridge") for _ in range(2))
    for g in gates:
        setting = json.loads(g.evidence_json)["setting"]
        prior = {m["env"]: m["regret_at_k"] for m in metrics if m["setting"] == setting and m["predictor"] == "prior"}
        mine = {m["env"]: m["regret_at_k"] for m in metrics
                if m["setting"] == setting and m["predictor"] == g.candidate_id.split(":")[1]}
        assert g.delta == pytest.approx(fmean(mine[e] - prior[e] for e in prior))
        assert g.decision == ("accept" if g.ci_high < 0 else "reject")
    [champion] = s.read_rows("registry", run_id)
    assert champion.name == "lasso/research_world_models-recipe" and champion.holdout_score is not None
    before = {t: len(s.read_rows(t, run_id)) for t in ("candidates", "executions", "scores", "distillates", "registry")}
    research_world_models(config=stored_config(store, run_id), store_uri=store, run_id=run_id)  # every stage again
    assert {t: len(s.read_rows(t, run_id)) for t in before} == before
    answered = runner.invoke(app, ["sql", "SELECT count(*) AS n FROM distillates WHERE kind = 'rwm_selection'",
                                   "--store", store, "--format", "json"])
    assert json.loads(answered.stdout) == [{"n": 48}]


def test_the_report_draws_regret_per_environment_and_the_gate(finished, tmp_path):
    from cli.report import report_series, write_report

    store, run_id = finished
    series = report_series(store, run_id)
    assert series["family"] == "rwm"
    assert len(series["series"].metrics) == 2 * 4 * 3 and len(series["series"].gates) == 4
    path = write_report(store, run_id, tmp_path / "rwm.png")
    assert path.stat().st_size > 20_000
