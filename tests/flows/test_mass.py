"""The mass loop end to end on the real engine, store and toolsim, at a tiny size:
2 generations of 2 children, 5 instances per template."""

import hashlib
import json

import pytest

from flows.mass import mass
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "train_steps", "gate_decisions", "registry", "mass_workflows", "mass_executions",
          "mass_pairwise", "mass_sft_examples", "mass_evals")


def small_config() -> RunConfig:
    return RunConfig(loop="mass", suite="toolsim", budget=2, seed=0, tracking=False,
                     suite_params={"instances_per_template": 5}, mass={"children": 2, "repeats": 1})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("mass") / "store")
    summary = mass(config=small_config(), store_uri=root, run_id="mass-a")
    return open_store(root), root, summary


def test_tables_hold_the_generations_and_the_distillation(run):
    store, root, summary = run
    execs = store.read_rows("mass_executions")
    train = len({e.task_id for e in execs if e.gen == 1})
    assert train == 8  # 5 instances per template: one train instance each (SPLIT_CYCLE)
    pairs = sql(open_store(root), "SELECT gen, count(*) AS n FROM mass_pairwise GROUP BY gen ORDER BY gen").to_pylist()
    assert [p["gen"] for p in pairs] == [1, 2] and all(p["n"] % train == 0 and p["n"] > 0 for p in pairs)
    bad = sql(open_store(root), "SELECT count(*) AS n FROM mass_sft_examples s JOIN mass_executions e "
                                "USING (run_id, exec_id) WHERE NOT e.success").to_pylist()
    assert bad == [{"n": 0}]  # the filter keeps successful runs only
    assert len(store.read_rows("mass_sft_examples")) == summary["sft_examples"] > 0
    evals = store.read_rows("mass_evals")
    assert {e.model_gen for e in evals} == {"workflow-seed", "workflow-evolved", "policy-old", "policy-distilled",
                                            "policy-old+workflow-evolved"}
    assert {e.bench for e in evals} == {"holdout", "test"}


def test_ids_are_content_ids_and_gates_explain_themselves(run):
    store, root, summary = run
    for c in store.read_rows("candidates"):
        assert hashlib.sha256(store.get_blob(c.candidate_id)).hexdigest() == c.candidate_id
    for w in store.read_rows("mass_workflows"):
        assert hashlib.sha256(w.spec_json.encode()).hexdigest() == w.wf_id
    decisions = store.read_rows("gate_decisions")
    inner = sorted((d for d in decisions if d.gate == "mass_workflow"), key=lambda d: d.round)
    assert [d.round for d in inner] == [1, 2]
    for d in inner:
        child = json.loads(d.evidence_json)["children"][d.candidate_id]
        assert (d.decision == "accept") == (child["wins"] >= child["losses"])
        assert d.n_cases == child["wins"] + child["losses"] + child["ties"]
    policy = [d for d in decisions if d.gate == "mass_policy"]
    assert len(policy) == 1 and policy[0].n_cases == 8
    assert (len(store.read_rows("registry")) == 1) == (policy[0].decision == "accept") == summary["registered"]


def test_rerun_writes_nothing_new(run):
    store, root, summary = run
    before = counts(store)
    again = mass(config=small_config(), store_uri=root, run_id="mass-a")
    assert counts(open_store(root)) == before
    assert again["candidate_id"] == summary["candidate_id"]


def test_report_plots_the_models(run, tmp_path):
    from cli.report import report_series, write_report

    _, root, _ = run
    report = report_series(root, "mass-a")
    assert report["family"] == "mass"
    assert write_report(root, "mass-a", tmp_path / "mass.png").stat().st_size > 0
