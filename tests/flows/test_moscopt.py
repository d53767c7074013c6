"""The moscopt loop end to end on the real engine, store, sandbox and toolsim (version 2)
at a tiny budget: the spec's tables answer in SQL, each gate decision is recomputed from
the edits table, and re-running the same run id adds nothing."""

import json

import pytest

from flows.moscopt import moscopt
from schemas.configs import RunConfig
from schemas.moscopt import MoscoptConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "distillates", "gate_decisions", "registry")


def small_config() -> RunConfig:
    return RunConfig(loop="moscopt", suite="toolsim", budget=3, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 5, "version": 2}, moscopt=MoscoptConfig(k=2, period=3))


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("moscopt")
    summary = moscopt(config=small_config(), store_uri=str(root), run_id="moscopt-a")
    store = open_store(str(root))
    before = counts(store)
    again = moscopt(config=small_config(), store_uri=str(root), run_id="moscopt-a")
    return store, summary, before, again


def kind(store, name: str) -> list[dict]:
    rows = sql(store, f"SELECT content FROM distillates WHERE kind = '{name}' ORDER BY round, distillate_id")
    return [json.loads(r["content"]) for r in rows.to_pylist()]


def test_rerunning_the_same_run_adds_nothing(run):
    store, summary, before, again = run
    assert counts(store) == before and again == summary


def test_the_spec_tables_answer_in_sql(run):
    store, *_ = run
    for name in ("moscopt_skills", "moscopt_skill_stats", "moscopt_gating", "moscopt_selections", "moscopt_edits",
                 "moscopt_episodes"):
        assert kind(store, name), name
    selections = kind(store, "moscopt_selections")
    assert all(len(s["skill_ids"]) == 2 for s in selections)
    stages = sql(store, "SELECT json_extract(content, '$.stage')::INT AS stage FROM distillates "
                        "WHERE kind = 'moscopt_edits' ORDER BY round").to_pylist()
    assert [s["stage"] for s in stages] == [1, 2, 3][:len(stages)]


def test_each_decision_is_the_edits_validation_comparison(run):
    store, summary, *_ = run
    decisions = {d.round: d for d in store.read_rows("gate_decisions") if d.gate == "validation_improves"}
    edits = {e["round"]: e for e in kind(store, "moscopt_edits")}
    assert set(decisions) == set(edits)
    for r, edit in edits.items():
        assert decisions[r].decision == ("accept" if edit["val_after"] > edit["val_before"] else "reject")
        assert decisions[r].delta == pytest.approx(edit["val_after"] - edit["val_before"])
        assert json.loads(decisions[r].evidence_json)["operator"] == edit["operator"]
    registry = store.read_rows("registry")
    assert len(registry) == 1 + sum(d.decision == "accept" for d in decisions.values())
    assert all(r.holdout_score is not None for r in registry)
    assert summary["accepted"] == sum(e["accepted"] for e in edits.values())


def test_the_report_reads_the_run_in_sql(run):
    from cli.report_moscopt import moscopt_build, moscopt_caption, moscopt_figure
    from storage.catalog import connect

    store, *_ = run
    series, empty = moscopt_build(connect(store), "moscopt-a")
    assert empty is None and len(series.edits) == len(kind(store, "moscopt_edits"))
    assert all(s["n_active"] >= s["n_success"] for s in series.stats)
    assert moscopt_figure(series).axes and "stage 1" in moscopt_caption(series)
