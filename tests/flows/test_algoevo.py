"""algoevo end to end on the real engine, store and sandbox (circle_packing, lasso and
bin_packing held out; 2 evaluations per task): every evaluation has its card whose before
and after are the recorded select means, node statistics add up along the lineage, the
gate's decisions follow the 2-distinct-task rule on the recorded cards, the held-out task
loads the skill the last gate produced, the tables answer in SQL, a second call adds
nothing, and `ratchet run algoevo` refuses what it cannot run in one line."""

import json
from statistics import fmean

import pytest

from flows.algoevo import algoevo
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.loops.algoevo.gate import card_of
from tasks.loops.algoevo.logic import patterns

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "gate_decisions", "registry", "ae_cards", "ae_nodes", "ae_patterns",
          "ae_task_runs")
METRIC = {"circle_packing": "sum_radii", "lasso": "neg_log10_cpu_ms", "bin_packing": "neg_excess_pct"}


def config(**section) -> RunConfig:
    return RunConfig(loop="algoevo", suite="circle_packing+bin_packing+lasso", budget=2, seed=0, tracking=False,
                     workers=1, algoevo={"min_cards": 1, **section})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("algoevo") / "store")
    return uri, algoevo(config=config(), store_uri=uri, run_id="ae")


def select_mean(store, candidate_id: str, metric: str, tag: str) -> float:
    rows = store.read_part("scores", "ae", "score", tag)
    return fmean(r.value for r in rows if r.metric == metric and r.candidate_id == candidate_id)


def test_every_evaluation_has_its_card_with_the_recorded_scores(ran):
    uri, summary = ran
    store = open_store(uri)
    cards = sorted(store.read_rows("ae_cards", "ae"), key=lambda c: (c.position, c.eval_idx))
    candidates = {c.candidate_id: c for c in store.read_rows("candidates", "ae")}
    assert [t["task_id"] for t in summary["tasks"]] == ["circle_packing", "lasso", "bin_packing"]
    assert len(cards) == sum(t["evals"] for t in summary["tasks"]) == 6
    for c in cards:
        metric = METRIC[c.task_id]
        tag = f"t{c.position:02d}-e{c.eval_idx:04d}"
        assert c.after == pytest.approx(select_mean(store, c.node, metric, tag))
        assert candidates[c.node].parent_ids == [c.parent] and candidates[c.node].operator == c.family
        assert json.loads(c.modification)["family"] == c.family
        assert (c.delta is None) or c.delta == pytest.approx(c.after - c.before)
    for t in summary["tasks"]:
        assert t["best"] >= t["root_score"] and len(t["curve"]) == t["evals"] + 1


def test_node_stats_add_up_along_the_lineage(ran):
    uri, _ = ran
    store = open_store(uri)
    for task in ("circle_packing", "lasso", "bin_packing"):
        nodes = {n.id: n for n in store.read_rows("ae_nodes", "ae") if n.task_id == task}
        assert len(nodes) == 3  # the root and 2 children
        for n in nodes.values():
            children = [m for m in nodes.values() if m.parent == n.id]
            assert n.visits == 1 + sum(m.visits for m in children)
            bests = [b for b in [n.score if n.valid else None, *(m.best for m in children)] if b is not None]
            assert n.best == (max(bests) if bests else None)


def test_gate_follows_the_two_task_rule_and_the_heldout_task_loads_its_skill(ran):
    uri, summary = ran
    store = open_store(uri)
    cards = [card_of(r) for r in store.read_rows("ae_cards", "ae") if r.position <= 1]
    expected = {p.family: p for p in patterns(cards, min_tasks=2, min_cards=1, centred=True)}
    rows = [p for p in store.read_rows("ae_patterns", "ae") if p.after_task == 1]
    assert {p.family: (p.promoted, tuple(p.support_task_ids)) for p in rows} == \
        {f: (p.promoted, p.support) for f, p in expected.items()}
    decisions = [d for d in store.read_rows("gate_decisions", "ae") if d.round == 1]
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        assert d.decision == ("accept" if len(evidence["support_task_ids"]) >= 2 else "reject")
    promoted = {f for f, p in expected.items() if p.promoted}
    skills = [r for r in store.read_rows("registry", "ae") if r.name.endswith("/algoevo-skill")]
    final = max(skills, key=lambda r: r.version).candidate_id
    assert summary["tasks"][2]["skill_ver"] == final and summary["tasks"][2]["split"] == "heldout"
    body = json.loads(store.get_blob(final).decode())
    assert set(body["promoted_patterns"]) == promoted
    assert all(w == (3.0 if f in promoted else 1.0) for f, w in body["family_weights"].items())
    assert (len(skills) > 1) == bool(promoted)


def test_tables_answer_in_sql_and_a_second_call_adds_nothing(ran):
    uri, summary = ran
    store = open_store(uri)
    runs = sql(store, "SELECT task_id, split, evals, best FROM ae_task_runs WHERE run_id = 'ae' "
                      "ORDER BY position").to_pylist()
    assert [(r["task_id"], r["split"], r["evals"]) for r in runs] == \
        [("circle_packing", "source", 2), ("lasso", "source", 2), ("bin_packing", "heldout", 2)]
    per = sql(store, "SELECT task_id, count(*) AS n FROM ae_cards GROUP BY task_id ORDER BY task_id").to_pylist()
    assert per == [{"task_id": t, "n": 2} for t in ("bin_packing", "circle_packing", "lasso")]
    best = {r.name for r in store.read_rows("registry", "ae") if r.name.endswith("/algoevo-best")}
    assert best == {f"{t}/algoevo-best" for t in METRIC}
    before = {t: len(store.read_rows(t, "ae")) for t in TABLES}
    again = algoevo(config=config(), store_uri=uri, run_id="ae")
    assert {t: len(store.read_rows(t, "ae")) for t in TABLES} == before and again == summary


def test_the_report_reads_the_run_in_sql(ran, tmp_path):
    from cli.report_algoevo import algoevo_build, algoevo_caption, algoevo_figure
    from storage.catalog import connect

    uri, summary = ran
    series, empty = algoevo_build(connect(open_store(uri)), "ae")
    assert empty is None and [t["task_id"] for t in series.tasks] == ["circle_packing", "lasso", "bin_packing"]
    for t, s in zip(series.tasks, summary["tasks"]):
        assert t["gains"] == pytest.approx([b - s["root_score"] for b in s["curve"]])
    assert {p["family"] for p in series.patterns} == \
        {p.family for p in open_store(uri).read_rows("ae_patterns", "ae") if p.after_task == 1}
    assert algoevo_figure(series).axes and "Promoted:" in algoevo_caption(series)


def test_ratchet_run_algoevo_and_its_one_line_refusals(prefect_server, tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    uri = str(tmp_path / "store")
    runner = CliRunner()
    result = runner.invoke(app, ["run", "algoevo", "--budget", "1", "--store", uri, "--no-tracking",
                                 "--set", "algoevo.tasks=[circle_packing, bin_packing]"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    answer = runner.invoke(app, ["sql", "SELECT task_id, split, evals FROM ae_task_runs ORDER BY position",
                                 "--store", uri, "--format", "json"])
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.output) == [{"task_id": "circle_packing", "split": "source", "evals": 1},
                                         {"task_id": "bin_packing", "split": "heldout", "evals": 1}]
    for bad, says in ((["--set", "algoevo.tasks=[toolsim]"], "algoevo.tasks"), (["--suite", "lasso"], "circle_packing"),
                      (["--param", "datasets=or1"], "--param")):
        wrong = runner.invoke(app, ["run", "algoevo", "--store", uri, "--no-tracking", *bad])
        assert wrong.exit_code != 0 and "Traceback" not in wrong.output and says in wrong.output, wrong.output
