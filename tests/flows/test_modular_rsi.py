"""The modular_rsi loop end to end on the real engine, store, sandbox and toolsim, at a
tiny size: 2 rounds of 8-task batches from 3 pool templates."""

import hashlib
import json

import pytest

from flows.modular_rsi import modular_rsi
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "gate_decisions", "registry", "mrsi_rollouts", "mrsi_task_groups",
          "mrsi_findings", "mrsi_module_edits", "mrsi_integrations", "mrsi_evals")


def small_config(**params) -> RunConfig:
    return RunConfig(loop="modular_rsi", suite="toolsim", budget=2, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 5, "fault_rate": 0.3},
                     modular_rsi={"pool_templates": 3, "batch": 6, "min_support": 1, **params})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("modular_rsi") / "store")
    summary = modular_rsi(config=small_config(), store_uri=root, run_id="mrsi-a")
    return open_store(root), root, summary


def test_every_module_edit_starts_from_its_rounds_base_and_is_gated_with_evidence(run):
    store, root, _ = run
    edits = store.read_rows("mrsi_module_edits")
    assert edits
    bases = {r.round: r.harness_ver for r in store.read_rows("mrsi_rollouts")}
    from tasks.harness_loops.documents import literal_document
    from tasks.loops.modular_rsi.evolve import version
    for edit in edits:
        assert edit.base_ver == version(literal_document(store.get_blob(bases[edit.round]).decode()))
        assert edit.accepted == (edit.gate_static and edit.gate_overfit and bool(edit.gate_run))
    decisions = {json.loads(d.evidence_json)["edit_id"]: d for d in store.read_rows("gate_decisions")
                 if d.gate == "mrsi_module"}
    assert set(decisions) == {e.id for e in edits}
    got = sql(open_store(root), """
        SELECT e.module, d.decision, json_extract_string(d.evidence_json, '$.checks.overfit.reason') AS why
        FROM mrsi_module_edits e JOIN gate_decisions d ON d.candidate_id = e.candidate_id AND d.gate = 'mrsi_module'
        ORDER BY e.round, e.module""").to_pylist()
    assert len(got) == len(edits) and all(r["why"] for r in got)


def test_findings_are_recurring_and_routed_pool_only(run):
    store, _, _ = run
    pool = {r.task_id for r in store.read_rows("mrsi_rollouts")}
    assert len(pool) == 3
    groups = store.read_rows("mrsi_task_groups")
    assert all(g.mode == ("mixed" if g.n_succ and g.n_fail else "all_success" if g.n_succ else "no_success")
               for g in groups)
    for finding in store.read_rows("mrsi_findings"):
        assert set(finding.support_task_ids) <= pool
        routed = {g.task_id for g in groups if g.round == finding.round and g.module == finding.module}
        assert set(finding.support_task_ids) <= routed
    evals = store.read_rows("mrsi_evals")
    assert {e.benchmark for e in evals} == {"in_domain", "held_out"}
    assert {e.task_id.split("/")[0] for e in evals if e.benchmark == "in_domain"} == pool


def test_champion_is_registered_by_content_id_after_integration(run):
    store, _, summary = run
    (registered,) = store.read_rows("registry")
    assert registered.candidate_id == summary["candidate_id"] and registered.holdout_score is not None
    assert hashlib.sha256(store.get_blob(registered.candidate_id)).hexdigest() == registered.candidate_id
    integrations = sorted(store.read_rows("mrsi_integrations"), key=lambda r: r.round)
    assert [r.round for r in integrations] == [1, 2]
    (champion,) = [d for d in store.read_rows("gate_decisions") if d.gate == "mrsi_champion"]
    evidence = json.loads(champion.evidence_json)
    assert evidence["final"] == integrations[-1].candidate_id
    assert registered.candidate_id == (evidence["final"] if champion.decision == "accept" else evidence["seed"])


def test_a_rerun_of_the_same_run_writes_nothing_new(run):
    store, root, summary = run
    before = counts(store)
    again = modular_rsi(config=small_config(), store_uri=root, run_id="mrsi-a")
    assert counts(open_store(root)) == before and again["candidate_id"] == summary["candidate_id"]


def test_report_plots_every_gated_edit_and_the_benchmark_as_sql_holds(run, tmp_path):
    from PIL import Image

    from cli.report import draw, report_series, write_report

    store, root, _ = run
    report = report_series(root, "mrsi-a")
    assert report["family"] == "modular_rsi"
    series = report["series"]
    edits = store.read_rows("mrsi_module_edits")
    assert len(series.edits) == len(edits)
    assert sum(e["accepted"] for e in series.edits) == sum(e.accepted for e in edits)
    evals = store.read_rows("mrsi_evals")
    for row in series.evals:
        mine = [e.passed for e in evals if e.role == row["role"] and e.benchmark == row["benchmark"]]
        assert row["n"] == len(mine) and abs(row["rate"] - sum(mine) / len(mine)) < 1e-9
    figure, caption = draw(report)
    assert "integration conflicts" in caption and all(ax.get_title() for ax in figure.axes)
    path = write_report(root, "mrsi-a", tmp_path / "mrsi.png")
    with Image.open(path) as image:
        assert image.size[0] >= 1000
