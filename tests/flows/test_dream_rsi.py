"""dream_rsi end to end on the real engine, store and sandbox (circle_packing, tiny
budgets): every revealed node is a real evaluation whose recorded score is its select
mean, the dream rehearses the old policy too and never picks one that replays worse,
an earlier evolve run's tree joins the pool, `ratchet sql` sees the spec's tables, and a
second call of the run adds nothing."""

import json

import pytest

from flows.dream_rsi import dream_rsi
from flows.evolve import evolve
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.search.archive import split_means

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "distillates", "gate_decisions", "registry")
TINY = {"attempts": 6, "width": 3, "patience": 2, "rewriter_trials": 6}


def config(**section) -> RunConfig:
    return RunConfig(loop="dream_rsi", suite="circle_packing", budget=2, seed=0, tracking=False, workers=2,
                     dream_rsi={**TINY, **section})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("dream") / "store")
    evolve(config=RunConfig(loop="evolve", suite="circle_packing", budget=4, seed=1, tracking=False,
                            evolve={"children_per_round": 2}), store_uri=uri, run_id="ev")
    return uri, dream_rsi(config=config(replay_runs=["ev"]), store_uri=uri, run_id="dr")


def counts(uri: str) -> dict[str, int]:
    store = open_store(uri)
    return {table: len(store.read_rows(table, "dr")) for table in TABLES}


def test_every_node_is_a_real_evaluation_scored_by_its_select_mean(ran):
    uri, summary = ran
    store = open_store(uri)
    nodes = [json.loads(d.content) for d in store.read_rows("distillates", "dr") if d.kind == "dream_node"]
    means = split_means(store.read_rows("scores", "dr"), "sum_radii")
    programs = {c.candidate_id for c in store.read_rows("candidates", "dr") if c.artifact_kind == "program"}
    for node in nodes:
        assert node["node_id"] in programs
        assert node["score"] == pytest.approx(means[(node["node_id"], "select")])
    for r in (0, 1):
        tree = [n for n in nodes if n["tree_id"] == f"dr/r{r:04d}"]
        assert tree[0]["parent_node_id"] is None and 1 <= len(tree) - 1 <= TINY["attempts"]
    assert summary["discovery_calls"] == [len([n for n in nodes if n["tree_id"] == f"dr/r{r:04d}"]) - 1
                                          for r in (0, 1)]


def test_the_dream_rehearses_the_old_policy_and_the_pick_is_never_worse(ran):
    uri, _ = ran
    store = open_store(uri)
    replays = [json.loads(d.content) for d in store.read_rows("distillates", "dr") if d.kind == "dream_replay_eval"]
    initial = next(c for c in store.read_rows("candidates", "dr") if c.operator == "initial").candidate_id
    trees = {r["tree_id"] for r in replays}
    assert trees == {"dr/r0000", "ev"}  # round 0's tree and the evolve run's archive
    cost = {}
    for r in replays:
        cost.setdefault(r["policy_id"], []).append(r["cost"])
    assert initial in cost and all(len(v) == 2 for v in cost.values())
    decisions = store.read_rows("gate_decisions", "dr")
    accepted = [d for d in decisions if d.decision == "accept"]
    assert len(accepted) <= 1
    for d in accepted:
        assert sum(cost[d.candidate_id]) <= sum(cost[initial])
    unavailable = sum(r["unrecorded_requests"] for r in replays)
    assert unavailable == sum(json.loads(d.evidence_json)["unrecorded_requests"] for d in decisions) + sum(
        r["unrecorded_requests"] for r in replays if r["policy_id"] == initial)


def test_the_spec_tables_answer_in_sql_and_a_second_call_adds_nothing(ran):
    uri, summary = ran
    store = open_store(uri)
    rounds = sql(store, "SELECT json_extract(content, '$.discovery_calls')::INT AS calls FROM distillates "
                        "WHERE run_id = 'dr' AND kind = 'dream_real_round' ORDER BY round").to_pylist()
    assert [r["calls"] for r in rounds] == summary["discovery_calls"]
    policies = sql(store, "SELECT count(*) AS n FROM candidates WHERE run_id = 'dr' AND artifact_kind = 'scheduler'")
    assert policies.to_pylist()[0]["n"] >= 2
    before = counts(uri)
    again = dream_rsi(config=config(replay_runs=["ev"]), store_uri=uri, run_id="dr")
    assert counts(uri) == before and again == summary


def test_the_report_draws_the_discovery_curves_and_the_dreams(ran, tmp_path):
    from cli.report import report_series, write_report

    uri, summary = ran
    series = report_series(uri, "dr")
    assert series["family"] == "dream"
    assert [r["discovery_calls"] for r in series["series"].rounds] == summary["discovery_calls"]
    assert set(series["series"].replays) == {1}
    path = write_report(uri, "dr", tmp_path / "dream.png")
    assert path.stat().st_size > 20_000


def test_ratchet_replay_rehearses_a_policy_on_recorded_trees_and_names_a_wrong_run(ran):
    from typer.testing import CliRunner

    from cli.main import app
    from tasks.search.schedule import Policy, rehearse
    from tasks.search.trees import run_trees

    uri, _ = ran
    store = open_store(uri)
    trees = run_trees(store, "ev", "sum_radii") + run_trees(store, "dr", "sum_radii")
    expected = rehearse(Policy(0.5, 2, 3), trees)
    result = CliRunner().invoke(app, ["replay", "ev", "dr", "--store", uri, "--ucb-c", "0.5", "--width", "2",
                                      "--patience", "3"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"mean replay cost {expected.score:.4f} over 3 trees" in result.output
    wrong = CliRunner().invoke(app, ["replay", "nope", "--store", uri])
    assert wrong.exit_code != 0 and "no run 'nope' in the store" in wrong.output
