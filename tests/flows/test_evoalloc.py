"""evoalloc end to end on the real engine, store and sandbox (bin_packing with a Partial
level, circle_packing Full/Discard only; tiny budgets): every allocation's level matches
the cases actually executed, its scores are the select means, new bests are recomputed
from the order, the shadow decisions follow the acceptance rule on the recorded cases,
the tables answer in SQL, and a second call of the run adds nothing."""

import json
from statistics import fmean

import pytest

from flows.evoalloc import evoalloc
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from tasks.loops.evoalloc.logic import AllocCase, AllocPolicy, shadow_accept

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "distillates", "gate_decisions", "registry")
TINY = {"children_per_round": 3, "revise_every": 2, "shadow_window": 2, "discard_below": 0.5,
        "counterfactual_rate": 0.5}


def config(suite: str, budget: int, **section) -> RunConfig:
    return RunConfig(loop="evoalloc", suite=suite, budget=budget, seed=0, tracking=False, workers=2,
                     evoalloc={**TINY, **section})


@pytest.fixture(scope="module")
def ran(prefect_server, tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("evoalloc") / "store")
    return uri, evoalloc(config=config("bin_packing", 4), store_uri=uri, run_id="ea")


def allocations(uri: str, run_id: str) -> list[dict]:
    rows = open_store(uri).read_rows("distillates", run_id)
    return sorted((json.loads(d.content) for d in rows if d.kind == "evoalloc_allocation"), key=lambda a: a["order"])


def test_each_level_ran_exactly_its_cases_and_records_their_means(ran):
    uri, summary = ran
    store = open_store(uri)
    select = {c: v for c, v in [(s.case_id, s.split) for s in store.read_rows("scores", "ea")] if v == "select"}
    partial_cases = {c for c in select if c.startswith("or1/")}
    assert len(select) == 21 and len(partial_cases) == 5  # 5 instance files x 4-5 select cases; or1 is Partial
    values: dict[str, dict[str, float]] = {}
    for s in store.read_rows("scores", "ea"):
        if s.metric == "neg_excess_pct" and s.split == "select":
            values.setdefault(s.candidate_id, {})[s.case_id] = s.value
    rows = allocations(uri, "ea")
    for a in rows:
        got = values.get(a["candidate_id"], {})
        expected = {"discard": set(), "partial": partial_cases, "full": set(select)}[a["level"]]
        assert set(got) == expected, a["level"]
        if a["level"] != "discard":
            assert a["partial_score"] == pytest.approx(fmean(got[c] for c in partial_cases))
        assert (a["full_score"] is None) == (a["level"] != "full")
        if a["full_score"] is not None:
            assert a["full_score"] == pytest.approx(fmean(got.values()))
        assert a["counterfactual"] <= (a["decision"] == "discard" and a["level"] == "full")
    best = rows[0]["full_score"]
    for a in rows[1:]:
        if a["full_score"] is not None:
            assert a["is_new_best"] == (a["full_score"] > best)
            best = max(best, a["full_score"])
    assert summary["full_evals"] == sum(a["level"] == "full" for a in rows)
    assert summary["partial_evals"] == sum(a["partial_run"] for a in rows)
    assert summary["best_score"] == pytest.approx(best)


def test_shadow_decisions_follow_the_acceptance_rule_on_the_recorded_cases(ran):
    uri, _ = ran
    store = open_store(uri)
    rows = allocations(uri, "ea")
    decisions = store.read_rows("gate_decisions", "ea")
    assert decisions, "the tiny run reaches at least one shadow decision"
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        trial = [AllocCase(a["candidate_id"], a["parent_pct"],
                           None if a["partial_score"] is None else a["partial_score"] - a["parent_partial"],
                           a["is_new_best"]) for a in rows if a["shadow_version"] == d.candidate_id]
        assert len(trial) == d.n_cases >= TINY["shadow_window"]
        accept, stats = shadow_accept(AllocPolicy.from_code(evidence["old"]), AllocPolicy.from_code(evidence["new"]),
                                      trial, True)
        assert d.decision == ("accept" if accept else "reject")
        assert {k: evidence[k] for k in stats} == stats
    experience = [d for d in store.read_rows("distillates", "ea") if d.kind == "evoalloc_experience"]
    assert len(experience) >= len(decisions)
    policies = {c.candidate_id for c in store.read_rows("candidates", "ea") if c.artifact_kind == "allocator"}
    assert {json.loads(e.content)["version"] for e in experience} <= policies


def test_the_tables_answer_in_sql_and_a_second_call_adds_nothing(ran):
    uri, summary = ran
    store = open_store(uri)
    levels = sql(store, "SELECT json_extract_string(content, '$.level') AS level, count(*) AS n FROM distillates "
                        "WHERE run_id = 'ea' AND kind = 'evoalloc_allocation' GROUP BY level").to_pylist()
    by_level = {r["level"]: r["n"] for r in levels}
    assert by_level.get("full", 0) == summary["full_evals"]
    run = sql(store, "SELECT json_extract(content, '$.full_evals')::INT AS n FROM distillates "
                     "WHERE run_id = 'ea' AND kind = 'evoalloc_run'").to_pylist()
    assert run == [{"n": summary["full_evals"]}]
    names = {r.name for r in store.read_rows("registry", "ea")}
    assert names == {"bin_packing/evoalloc-policy", "bin_packing/evoalloc-best"}
    before = {t: len(store.read_rows(t, "ea")) for t in TABLES}
    again = evoalloc(config=config("bin_packing", 4), store_uri=uri, run_id="ea")
    assert {t: len(store.read_rows(t, "ea")) for t in TABLES} == before and again == summary


def test_circle_packing_has_full_and_discard_only(prefect_server, tmp_path):
    uri = str(tmp_path / "store")
    summary = evoalloc(config=config("circle_packing", 1, children_per_round=2, arm="fixed"), store_uri=uri,
                       run_id="cp")
    rows = allocations(uri, "cp")
    assert {a["level"] for a in rows} <= {"full", "discard"} and summary["partial_evals"] == 0
    assert all(a["partial_score"] is None for a in rows)
    assert summary["full_evals"] == sum(a["level"] == "full" for a in rows)


def test_ratchet_run_evoalloc_with_a_suite_and_a_wrong_suite_in_one_line(prefect_server, tmp_path):
    from typer.testing import CliRunner

    from cli.main import app

    uri = str(tmp_path / "store")
    runner = CliRunner()
    result = runner.invoke(app, ["run", "evoalloc", "--suite", "bin_packing", "--budget", "1", "--store", uri,
                                 "--no-tracking", "--set", "evoalloc.children_per_round=2"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    answer = runner.invoke(app, ["sql", "SELECT holdout_score AS h FROM registry WHERE name = 'bin_packing/evoalloc-best'",
                                 "--store", uri, "--format", "json"])
    assert answer.exit_code == 0, answer.output
    (row,) = json.loads(answer.output)
    assert row["h"] == pytest.approx(-5.75173606, abs=1e-6)  # the seed program's held-out score (no child beat it)
    wrong = runner.invoke(app, ["run", "evoalloc", "--suite", "toolsim", "--store", uri, "--no-tracking"])
    assert wrong.exit_code != 0 and "Traceback" not in wrong.output and "bin_packing" in wrong.output
