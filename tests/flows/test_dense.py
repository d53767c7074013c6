"""dense end to end on the real engine, store and toolsim: every attempt recorded once,
every method's retry on the same noise, the trees and issues in SQL, the memory gate's
decisions with their evidence, admitted memories registered, a second run on the same
store judged against the first run's memories, and a rerun of a finished run adding
nothing."""

import json

import pytest

from flows.dense import dense
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration]

TABLES = ("attempts", "steps", "candidates", "tree_nodes", "issues", "gate_decisions", "registry")
TASKS = 8 * 2  # instances_per_template=2: index 0 train, index 1 select
METHODS = 6


def config(**overrides) -> RunConfig:
    base = dict(loop="dense", suite="toolsim", budget=2, seed=0, workers=1, tracking=False,
                suite_params={"instances_per_template": 2})
    return RunConfig(**{**base, **overrides})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    store_uri = str(tmp_path_factory.mktemp("dense") / "store")
    return store_uri, dense(config=config(), store_uri=store_uri, run_id="dense-a")


def counts(store_uri: str, run_id: str) -> dict[str, int]:
    store = open_store(store_uri)
    return {table: len(store.read_rows(table, run_id)) for table in TABLES}


def test_every_attempt_is_recorded_once_per_phase_and_method(ran):
    store_uri, summary = ran
    rows = sql(open_store(store_uri), "SELECT phase, feedback_method, count(*) AS n, count(DISTINCT task_id) AS t "
                                      "FROM attempts WHERE run_id = 'dense-a' GROUP BY ALL ORDER BY ALL").to_pylist()
    assert {(r["phase"], r["feedback_method"]): (r["n"], r["t"]) for r in rows} == {
        ("initial", "initial"): (TASKS * 2, TASKS),
        **{("retry", m): (TASKS * 2, TASKS) for m in ("none", "raw", "flat", "tree", "tree_nsr", "labelled")}}
    unique = sql(open_store(store_uri), "SELECT count(*) AS n, count(DISTINCT candidate_id) AS d FROM candidates "
                                        "WHERE run_id = 'dense-a'").to_pylist()
    assert unique == [{"n": 1 + TASKS * 2 * METHODS, "d": 1 + TASKS * 2 * METHODS}]  # starter + every document
    assert "method tree" in summary and summary["memories"].endswith("of 8 select tasks admitted")


def test_no_feedback_reads_nothing_and_the_tree_closes_issues_only_with_evidence(ran):
    store_uri, _ = ran
    store = open_store(store_uri)
    none = sql(store, "SELECT max(tokens) AS t FROM attempts WHERE run_id = 'dense-a' AND feedback_method = 'none'")
    assert none.to_pylist() == [{"t": 0}]
    bad = sql(store, "SELECT count(*) AS n FROM issues WHERE run_id = 'dense-a' AND closed <> "
                     "(closing_evidence IS NOT NULL)").to_pylist()
    assert bad == [{"n": 0}]
    # a reconciled issue's closing step is a later success in the same subgoal
    joined = sql(store, """
        SELECT i.step, i.closing_evidence, n.evidence_step_ids FROM issues i
        JOIN tree_nodes n USING (run_id, fb_id, node_id)
        WHERE i.run_id = 'dense-a' AND n.feedback_method = 'tree' AND i.closed AND n.node_id <> 'root'""").to_pylist()
    assert joined and all(r["closing_evidence"] > r["step"] and r["closing_evidence"] in r["evidence_step_ids"]
                          for r in joined)


def test_memory_decisions_explain_themselves_and_accepted_ones_are_registered(ran):
    store_uri, _ = ran
    store = open_store(store_uri)
    decisions = [d for d in store.read_rows("gate_decisions", "dense-a") if d.gate == "dense_memory"]
    assert len(decisions) == 8 and all(json.loads(d.evidence_json)["task"].endswith("/001") for d in decisions)
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        mine = sum(t["passed"] for t in evidence["candidate"]) / 2
        theirs = sum(t["passed"] for t in evidence["baseline_trials"]) / 2
        assert (d.select_score, d.baseline_score, d.delta) == (mine, theirs, mine - theirs)
        assert evidence["baseline"] == "none"
    registry = store.read_rows("registry", "dense-a")
    assert sorted(r.candidate_id for r in registry) == sorted(d.candidate_id for d in decisions
                                                              if d.decision == "accept")
    assert {r.version for r in registry} == {1}


def test_a_second_run_is_judged_against_the_first_runs_memory_and_a_rerun_adds_nothing(ran):
    store_uri, _ = ran
    before = counts(store_uri, "dense-a")
    dense(config=config(), store_uri=store_uri, run_id="dense-a")
    assert counts(store_uri, "dense-a") == before
    dense(config=config(), store_uri=store_uri, run_id="dense-b")
    store = open_store(store_uri)
    registered = {r.name: r.candidate_id for r in store.read_rows("registry", "dense-a")}
    for d in store.read_rows("gate_decisions", "dense-b"):
        if d.gate != "dense_memory":
            continue
        name = "toolsim/dense/" + json.loads(d.evidence_json)["task"]
        if name in registered:  # same seed: the same document, so nothing new to admit
            assert d.baseline_id == registered[name] == d.candidate_id and d.decision == "reject"


def test_the_report_draws_what_the_attempts_say(ran, tmp_path):
    from statistics import fmean

    from cli.report import report_series, write_report

    store_uri, _ = ran
    series = report_series(store_uri, "dense-a")["series"]
    attempts = open_store(store_uri).read_rows("attempts", "dense-a")
    initial = {(a.task_id, a.repeat): a for a in attempts if a.phase == "initial"}
    tree = [a for a in attempts if a.feedback_method == "tree"]
    per_task = {}
    for a in tree:
        per_task.setdefault(a.task_id, []).append(a.passed - initial[(a.task_id, a.repeat)].passed)
    row = next(m for m in series.methods if m["method"] == "tree")
    assert row["d_pass"] == pytest.approx(fmean(fmean(v) for v in per_task.values()))
    assert [m["method"] for m in series.methods] == ["none", "raw", "flat", "tree", "tree_nsr", "labelled"]
    path = write_report(store_uri, "dense-a", tmp_path / "dense.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000


@pytest.mark.parametrize("overrides, message", [
    ({"methods": ["tree"]}, "must include 'none'"),
    ({"methods": ["none", "magic"]}, "unknown"),
    ({"memory_method": "labelled"}, "must be one of the unlabelled methods"),
])
def test_configs_that_cannot_be_measured_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        config(dense=overrides)
