"""The graphskillevo loop end to end on the real engine, store, sandbox and toolsim, at a
tiny size: population 3, 2 generations of 6-task batches."""

import json

import pytest

from flows.graphskillevo import graphskillevo
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "gate_decisions", "registry", "gse_skills", "gse_train_runs", "gse_val_scores",
          "gse_population", "gse_test")


def small_config(**params) -> RunConfig:
    return RunConfig(loop="graphskillevo", suite="toolsim", budget=2, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 5},
                     graphskillevo={"population": 3, "offspring": 3, "batch": 6, "max_failures": 2, **params})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("graphskillevo") / "store")
    summary = graphskillevo(config=small_config(), store_uri=root, run_id="gse-a")
    return open_store(root), root, summary


def test_population_never_exceeds_its_size_and_only_improves(run):
    store, _, summary = run
    by_gen = {}
    for row in store.read_rows("gse_population"):
        by_gen.setdefault(row.gen, []).append(row)
    assert sorted(by_gen) == [0, 1, 2] and len(by_gen[0]) == 1
    assert all(len(rows) <= 3 for rows in by_gen.values())
    best = [max(r.val_success for r in by_gen[g]) for g in sorted(by_gen)]
    assert best == sorted(best)
    assert summary["val_success"] == best[-1]


def test_every_offspring_is_gated_with_its_evidence_and_invalid_ones_never_run(run):
    store, _, _ = run
    skills = {r.skill_id: r for r in store.read_rows("gse_skills")}
    decisions = [d for d in store.read_rows("gate_decisions") if d.gate == "gse_select"]
    assert {json.loads(d.evidence_json)["skill_id"] for d in decisions} == {s for s, r in skills.items() if r.gen > 0}
    ran = {e.candidate_id for e in store.read_rows("executions")}
    members = {(r.gen, r.skill_id) for r in store.read_rows("gse_population")}
    for d in decisions:
        evidence, row = json.loads(d.evidence_json), skills[json.loads(d.evidence_json)["skill_id"]]
        assert d.decision == ("accept" if (d.round, row.skill_id) in members else "reject")
        if not row.valid:
            assert row.reason and row.candidate_id is None and evidence["invalid_reason"] == row.reason
            assert d.candidate_id not in ran
        else:
            assert d.select_score == evidence["val_success"] and d.n_cases == 8


def test_failures_fed_back_are_failed_and_capped(run):
    store, _, _ = run
    rows = store.read_rows("gse_train_runs")
    assert rows and all(not r.success for r in rows if r.feedback)
    per = {}
    for r in rows:
        per[(r.gen, r.skill_id)] = per.get((r.gen, r.skill_id), 0) + r.feedback
    assert max(per.values()) <= 2


def test_champion_is_registered_by_content_id_and_tables_answer_in_sql(run):
    store, root, summary = run
    (registered,) = store.read_rows("registry")
    assert registered.candidate_id == summary["candidate_id"] and registered.holdout_score is not None
    program = store.get_blob(registered.candidate_id)
    import hashlib
    assert hashlib.sha256(program).hexdigest() == registered.candidate_id
    got = sql(open_store(root), "SELECT role, count(*) AS n FROM gse_test GROUP BY role ORDER BY role").to_pylist()
    assert got == [{"role": "champion", "n": 8}, {"role": "seed", "n": 8}]


def test_a_rerun_of_the_same_run_writes_nothing_new(run):
    store, root, summary = run
    before = counts(store)
    again = graphskillevo(config=small_config(), store_uri=root, run_id="gse-a")
    assert counts(open_store(root)) == before and again["candidate_id"] == summary["candidate_id"]


def test_report_plots_the_population_and_offspring_sql_holds(run, tmp_path):
    from PIL import Image

    from cli.report import draw, report_series, write_report

    store, root, _ = run
    report = report_series(root, "gse-a")
    assert report["family"] == "gse"
    series = report["series"]
    assert len(series.population) == len(store.read_rows("gse_population"))
    assert len(series.offspring) == sum(r.gen > 0 for r in store.read_rows("gse_skills"))
    kept = sum(d.decision == "accept" for d in store.read_rows("gate_decisions") if d.gate == "gse_select")
    assert sum(r["decision"] == "accept" for r in series.offspring) == kept
    figure, caption = draw(report)
    assert "invalid and never run" in caption and all(ax.get_title() for ax in figure.axes)
    path = write_report(root, "gse-a", tmp_path / "gse.png")
    with Image.open(path) as image:
        assert image.size[0] >= 1000


def test_an_invalid_offspring_is_a_rejected_decision_with_its_reason_and_never_runs(run, tmp_path):
    import shutil

    from tasks.loops.graphskillevo.gate import decision_rows
    from tasks.loops.graphskillevo.graph import seed_skill
    from tasks.loops.graphskillevo.operators import Offspring
    from tasks.loops.graphskillevo.stages import skill_row
    from tasks.runtime.context import RunRef

    _, root, _ = run
    copy = str(tmp_path / "store")
    shutil.copytree(root, copy)
    ref = RunRef(store_uri=copy, run_id="gse-a")
    broken = seed_skill()
    broken["graph"]["edges"].append({"src": broken["graph"]["nodes"][0]["id"], "dst": "ghost"})
    seed = next(r.skill_id for r in open_store(copy).read_rows("gse_skills") if r.gen == 0)
    row = skill_row(ref, 2, Offspring(broken, "crossover:subgraph", (seed,), "hand-made"))
    open_store(copy).write_part("gse_skills", "gse-a", "test", "invalid", [row])
    (decision,) = decision_rows(ref, 2, [row.skill_id])
    assert decision.decision == "reject" and decision.reason.startswith("reject: invalid offspring, never run: dangling")
    assert json.loads(decision.evidence_json)["invalid_reason"] == row.reason and decision.select_score is None
    assert decision.candidate_id == row.skill_id and decision.n_cases == 0
