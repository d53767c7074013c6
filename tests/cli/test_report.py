"""`ratchet report` for every loop family: the PNG is a real image, and the series it is
drawn from equal what SQL says about the run (one tiny run per family, one store for the
module). Plus the pure series functions on hand-made rows, and the one-line errors."""

from datetime import datetime, timezone

import pytest
from PIL import Image
from typer.testing import CliRunner

from cli.main import app
from cli.report import draw, report_series, write_report
from cli.report_series import outcome_of, search_series, staircase, training_series
from schemas.rows import CandidateRow, RunRow
from storage.catalog import connect
from storage.store import open_store

runner = CliRunner()

TOOLSIM = ["--budget", "2", "--param", "instances_per_template=5"]
RUNS = {
    "evolve": ["--suite", "circle_packing", "--budget", "4", "--seed", "4", "--set", "sandbox.timeout_s=1"],
    "self_healing": TOOLSIM,
    "grpo": ["--budget", "2", "--param", "n_per_category=40", "--set", "grpo.pretrain_steps=10",
             "--set", "grpo.prompts_per_step=2", "--set", "grpo.group_size=2", "--set", "grpo.max_new_tokens=12",
             "--set", "grpo.eval_every=1"],
}


def sql(store: str, query: str, **params) -> list[dict]:
    con = connect(open_store(store))
    try:
        return con.execute(query, params).to_arrow_table().to_pylist()
    finally:
        con.close()


@pytest.fixture(scope="module")
def runs(prefect_server, tmp_path_factory):
    """One tiny run of each family in one store: (store, {loop: run_id})."""
    store = str(tmp_path_factory.mktemp("report") / "store")
    for loop, args in RUNS.items():
        result = runner.invoke(app, ["run", loop, "--store", store, "--no-tracking", *args])
        assert result.exit_code == 0, result.output + repr(result.exception)
    ids = {r["loop"]: r["run_id"] for r in sql(store, "SELECT loop, run_id FROM runs_current")}
    return store, ids


def assert_png(path, min_width=1000, min_height=500):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        width, height = image.size
    assert width >= min_width and height >= min_height and width < 4000 and height < 3000


def assert_labelled(report):
    """Every panel says what it shows: a title or a y label, and the caption is there."""
    figure, caption = draw(report)
    try:
        assert len(caption) > 100
        for ax in figure.axes:
            assert ax.get_title() or ax.get_ylabel() or [t.get_text() for t in ax.get_yticklabels()], ax
        assert any(ax.get_xlabel() for ax in figure.axes)
    finally:
        import matplotlib.pyplot as plt

        plt.close(figure)


@pytest.mark.slow
@pytest.mark.integration
def test_program_search_report(runs, tmp_path):
    store, ids = runs
    run_id = ids["evolve"]
    result = runner.invoke(app, ["report", run_id, "--store", store, "--out", str(tmp_path / "evolve.png")])
    assert result.exit_code == 0, result.output
    assert_png(tmp_path / "evolve.png")
    report = report_series(store, run_id)
    series = report["series"]
    assert report["family"] == "search" and report["metric"] == "sum_radii"
    assert_labelled(report)
    executed = sql(store, "SELECT count(DISTINCT candidate_id) AS n FROM executions WHERE run_id = $r AND split = "
                   "'select'", r=run_id)[0]["n"]
    assert len(series.points) == executed
    timed_out = sql(store, "SELECT DISTINCT candidate_id FROM executions WHERE run_id = $r AND split = 'select' "
                    "AND status = 'timeout'", r=run_id)
    assert {p.candidate_id for p in series.points if p.outcome == "timeout"} == {r["candidate_id"] for r in timed_out}
    assert all(p.score is None for p in series.points if p.outcome != "scored")
    accepts = sql(store, "SELECT count(*) AS n FROM gate_decisions WHERE run_id = $r AND decision = 'accept'",
                  r=run_id)[0]["n"]
    assert sum(p.decision == "accept" for p in series.points) == accepts
    best = [b for _, b in series.staircase]
    assert best == sorted(best) and best
    champions = sql(store, "SELECT version, select_score FROM registry WHERE run_id = $r AND alias = 'champion' "
                    "ORDER BY version", r=run_id)
    assert [c.version for c in series.champions] == [c["version"] for c in champions]
    assert best[-1] == pytest.approx(champions[-1]["select_score"])


@pytest.mark.slow
@pytest.mark.integration
def test_harness_report(runs, tmp_path):
    store, ids = runs
    run_id = ids["self_healing"]
    path = write_report(store, run_id, tmp_path / "heal.png")
    assert_png(path)
    report = report_series(store, run_id)
    series = report["series"]
    assert report["family"] == "harness" and report["metric"] == "success"
    assert_labelled(report)
    per_round = sql(store, "SELECT round, decision, count(*) AS n FROM gate_decisions WHERE run_id = $r "
                    "GROUP BY ALL", r=run_id)
    assert {(r["round"], r["decision"]): r["n"] for r in per_round} == {
        (round_, decision): n for round_, counts in series.counts.items() for decision, n in counts.items()}
    accepted = sum(d["decision"] == "accept" for d in series.decisions)
    assert accepted == sum(r["n"] for r in per_round if r["decision"] == "accept") and accepted >= 1
    champions = sql(store, "SELECT version, select_score, holdout_score FROM registry WHERE run_id = $r "
                    "AND alias = 'champion' ORDER BY version", r=run_id)
    assert [(c.version, c.select, c.holdout) for c in series.champions] == [
        (c["version"], c["select_score"], c["holdout_score"]) for c in champions]


@pytest.mark.slow
@pytest.mark.integration
def test_training_report(runs, tmp_path):
    store, ids = runs
    run_id = ids["grpo"]
    assert_png(write_report(store, run_id, tmp_path / "grpo.png"))
    report = report_series(store, run_id)
    series = report["series"]
    assert report["family"] == "training" and report["metric"] == "correct"
    assert_labelled(report)
    steps = sql(store, "SELECT step, loss FROM train_steps WHERE run_id = $r ORDER BY step", r=run_id)
    assert series.loss == [(s["step"], s["loss"]) for s in steps]
    warm = sql(store, "SELECT avg(s.value) AS acc FROM registry g JOIN scores s ON s.run_id = g.run_id "
               "AND s.candidate_id = g.candidate_id WHERE g.run_id = $r AND g.version = 1 AND s.split = 'select'",
               r=run_id)[0]["acc"]
    assert series.warm_start == pytest.approx(warm)
    assert series.select[0] == (0, pytest.approx(warm))
    evaluated = sql(store, "SELECT count(DISTINCT candidate_id) AS n FROM scores WHERE run_id = $r AND split = "
                    "'select'", r=run_id)[0]["n"]
    assert len(series.select) == evaluated == 3  # warm start + one per chunk
    assert [s for s, _ in series.select] == [0, 1, 2]
    final = sql(store, "SELECT holdout_score FROM registry WHERE run_id = $r AND alias = 'champion'", r=run_id)
    assert series.final.holdout == pytest.approx(final[0]["holdout_score"]) and series.final_step == 2


@pytest.mark.slow
@pytest.mark.integration
def test_unknown_run_names_the_fix(runs):
    store, _ = runs
    for run_id in ("no-such-run", "x' OR '1'='1"):
        with pytest.raises(SystemExit) as raised:
            write_report(store, run_id, None)
        assert "ratchet runs" in str(raised.value) and "\n" not in str(raised.value)


def test_a_run_with_nothing_to_plot_is_one_line(tmp_path):
    store = open_store(str(tmp_path / "store"))
    now = datetime.now(timezone.utc)
    store.write_part("runs", "evolve-crashed", "start", "0", [RunRow(
        run_id="evolve-crashed", loop="evolve", suite="circle_packing", config_json="{}", status="failed",
        event_at=now, started_at=now, finished_at=now, parent_run_id=None, prefect_flow_run_id=None,
        mlflow_run_id=None, code_version="test", error="RuntimeError: boom\nsecond line")])
    store.write_part("candidates", "evolve-crashed", "sample", "r0000", [CandidateRow(
        run_id="evolve-crashed", candidate_id="c" * 64, round=0, parent_ids=[], operator="seed", proposer="seed",
        artifact_kind="program", artifact_uri="blob", island=0, summary="seed")])
    with pytest.raises(SystemExit) as raised:
        write_report(str(tmp_path / "store"), "evolve-crashed", None)
    message = str(raised.value)
    assert "nothing to plot" in message and "ratchet resume evolve-crashed" in message and "\n" not in message


def test_failed_executions_are_not_zero_scores():
    ok = {"status": "ok", "valid": True, "value": 2.0}
    assert outcome_of([ok]) == "scored"
    assert outcome_of([ok, {"status": "timeout", "valid": False, "value": 0.0}]) == "timeout"
    assert outcome_of([{"status": "memory", "valid": False, "value": 0.0}]) == "crashed"
    assert outcome_of([{"status": "ok", "valid": False, "value": 0.0}]) == "invalid"
    rows = {
        "candidates": [{"round": 0, "candidate_id": "a"}, {"round": 1, "candidate_id": "b"},
                       {"round": 1, "candidate_id": "c"}, {"round": 2, "candidate_id": "d"}],
        "executions": [{"candidate_id": "a", **ok}, {"candidate_id": "b", "status": "timeout", "valid": False,
                                                      "value": 0.0},
                       {"candidate_id": "c", **ok, "value": 3.0}],
        "decisions": [{"candidate_id": "a", "decision": "accept"}, {"candidate_id": "b", "decision": "reject"},
                      {"candidate_id": "c", "decision": "accept"}],
        "champions": [],
    }
    series = search_series(rows)
    assert [(p.candidate_id, p.outcome, p.score) for p in series.points] == [
        ("a", "scored", 2.0), ("b", "timeout", None), ("c", "scored", 3.0)]  # d never ran: not a point
    assert series.staircase == [(0, 2.0), (1, 3.0)]
    assert series.outcome_counts() == {"scored": 2, "timeout": 1, "crashed": 0, "invalid": 0}


def test_staircase_never_goes_down():
    from cli.report_series import Point

    points = [Point(0, "a", 1.0, "accept", "scored"), Point(1, "b", 0.5, "accept", "scored"),
              Point(2, "c", 9.0, "reject", "scored"), Point(3, "d", 2.0, "accept", "scored")]
    assert staircase(points) == [(0, 1.0), (1, 1.0), (2, 1.0), (3, 2.0)]


def test_training_series_places_checkpoints_by_steps_taken():
    rows = {
        "steps": [{"candidate_id": "c1", "step": 0, "loss": 0.5, "metrics": {"accuracy": 0.25, "actor_loss": 0.4}},
                  {"candidate_id": "c1", "step": 1, "loss": 0.4, "metrics": {"accuracy": 0.5, "actor_loss": 0.3}}],
        "evaluations": [{"round": 0, "candidate_id": "w", "accuracy": 0.125},
                        {"round": 1, "candidate_id": "c1", "accuracy": 0.375}],
        "champions": [{"name": "arith/grpo", "version": 2, "candidate_id": "c1", "select_score": 0.375,
                       "holdout_score": 0.5, "round": None}],
    }
    series = training_series(rows)
    assert series.select == [(0, 0.125), (2, 0.375)] and series.warm_start == 0.125
    assert series.batch_accuracy == [(1, 0.25), (2, 0.5)] and series.extra_losses == {"actor_loss": [(0, 0.4), (1, 0.3)]}
    assert series.final.holdout == 0.5 and series.final_step == 2


def test_cover_pairs_each_problem_seed_of_both_checkpoints():
    from cli.report_cover import paired_auc

    evals = [{"ckpt": 0, "bench": "a", "seed": 0, "auc": 0.5}, {"ckpt": 4, "bench": "a", "seed": 0, "auc": 0.75},
             {"ckpt": 0, "bench": "a", "seed": 1, "auc": None}, {"ckpt": 4, "bench": "a", "seed": 1, "auc": 1.0},
             {"ckpt": 0, "bench": "b", "seed": 0, "auc": 0.9}, {"ckpt": 4, "bench": "b", "seed": 0, "auc": 0.8}]
    assert paired_auc(evals) == [(0.5, 0.75), (0.9, 0.8)]  # a#1 has no uniform AUC: left out
    assert paired_auc(evals[:1]) == []


def test_every_own_picture_is_a_module_with_its_three_functions_and_a_known_loop():
    from pathlib import Path

    from cli.report import OWN_PICTURES, picture_module
    from schemas.loops import LOOP_SPECS

    for loop, (picture, metric) in OWN_PICTURES.items():
        assert loop in LOOP_SPECS and metric
        module = picture_module(picture)
        assert all(callable(getattr(module, f"{picture}_{part}")) for part in ("build", "figure", "caption"))
    builders = {p.stem.removeprefix("report_") for p in Path("cli").glob("report_*.py")
                if f"def {p.stem.removeprefix('report_')}_build(" in p.read_text()}
    assert builders - {"protocol", "turns"} == {picture for picture, _ in OWN_PICTURES.values()}  # turns: protocol's


def test_captions_quote_the_latest_registration_and_the_last_gate_reason():
    import duckdb

    from cli.report_data import gate_reason, last_registered

    con = duckdb.connect()
    con.execute("CREATE TABLE registry (run_id TEXT, name TEXT, version INT, candidate_id TEXT, stage TEXT, "
                "select_score DOUBLE, holdout_score DOUBLE, event_at TIMESTAMP)")
    con.execute("INSERT INTO registry VALUES ('r', 'x', 2, 'c2', 'production', 0.7, 0.6, '2026-01-01 00:00:01'), "
                "('r', 'x', 1, 'c1', 'production', 0.5, 0.4, '2026-01-01 00:00:03'), "
                "('r', 'x', 2, 'c2b', 'archived', 0.7, 0.6, '2026-01-01 00:00:02'), "
                "('q', 'x', 9, 'other', 'production', 0.9, 0.9, '2026-01-01 00:00:09')")
    con.execute("CREATE TABLE gate_decisions (run_id TEXT, gate TEXT, round INT, reason TEXT)")
    con.execute("INSERT INTO gate_decisions VALUES ('r', 'p', 0, 'first'), ('r', 'p', 3, 'last'), "
                "('r', 'q', 5, 'other gate')")
    assert last_registered(con, "r")["candidate_id"] == "c2b"  # highest version, its newest event
    assert last_registered(con, "none") is None
    assert gate_reason(con, "r", "p") == "last"
    assert gate_reason(con, "r", "absent") is None
