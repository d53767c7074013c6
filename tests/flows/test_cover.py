"""cover runs for real from `ratchet run` on codemidas at a tiny size: the programs' GT
pass fractions and the tests' pass vectors are re-derived from the sandboxed outcomes, the
first REINFORCE step is re-derived from the recorded samples, a dropped test earns
nothing, the gate row is its paired comparison, the registered candidate is its content's
sha256, and a rerun adds nothing."""

import hashlib
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from cli.main import app
from flows.cover import cover
from storage.catalog import sql
from storage.store import open_store
from suites.codemidas.suite import kept_tasks
from tasks.loops.cover.policy import reinforce
from tasks.loops.cover.problems import OPERATORS, problem
from tasks.runtime.lifecycle import stored_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]
runner = CliRunner()
ARGS = ["--budget", "2", "--no-tracking", "--set", "cover.problems=2", "--set", "cover.programs=4",
        "--set", "cover.tests=6", "--set", "cover.pool_size=3", "--set", "cover.case_timeout_s=0.3"]


@pytest.fixture(scope="module")
def finished(prefect_server, tmp_path_factory):
    store = str(tmp_path_factory.mktemp("cover") / "store")
    result = runner.invoke(app, ["run", "cover", "--store", store, *ARGS])
    assert result.exit_code == 0, result.output + repr(result.exception)
    [run_id] = [r["run_id"] for r in sql(open_store(store), "SELECT run_id FROM runs_current").to_pylist()]
    return store, run_id


def distillates(store: str, run_id: str, kind: str) -> list[dict]:
    return [json.loads(d.content) for d in open_store(store).read_rows("distillates", run_id) if d.kind == kind]


def test_recorded_programs_tests_and_first_step_rederive_from_the_sandboxed_outcomes(finished):
    store, run_id = finished
    outcomes = {o["prob_id"]: o["outcomes"] for o in distillates(store, run_id, "cover_outcomes")}
    problems = {t["task_id"]: problem(t, 0, 3) for t in kept_tasks()[:2]}
    assert set(outcomes) == set(problems)
    for p in problems.values():
        p.outcomes = outcomes[p.task_id]
        assert p.gt_pass(0, "train") == 1.0  # the original passes its own GT tests in the sandbox
    programs = distillates(store, run_id, "cover_program")
    assert len(programs) == 2 * 2 * 4
    for r in programs:
        p = problems[r["prob_id"]]
        assert r["gt_pass_frac"] == p.gt_pass(p.ids.index(r["candidate_id"]), "train")
    tests = distillates(store, run_id, "cover_test")
    assert len(tests) == 2 * 2 * 6
    for t in tests:
        assert t["reward"] == (pytest.approx(t["mi"]) if t["kept"] and t["cov_sign"] > 0 else 0.0)
        assert t["kept"] == (t["drop_reason"] is None)
    assert all(len(x["passed"]) == 6 for x in distillates(store, run_id, "cover_exec"))
    code = np.zeros(len(OPERATORS))
    for prob in sorted(problems, key=list(problems).index):  # step 1: one REINFORCE step per problem, in order
        mine = sorted((r for r in programs if r["step"] == 1 and r["prob_id"] == prob), key=lambda r: r["prog_id"])
        code = reinforce(code, [OPERATORS.index(r["operator"]) for r in mine], [r["gt_pass_frac"] for r in mine], 1.0)
    [step1] = [r for r in distillates(store, run_id, "cover_policy") if r["step"] == 1 and r["role"] == "code"]
    assert step1["logits"] == pytest.approx(list(code))


def test_gate_register_and_a_rerun_adds_nothing(finished):
    store, run_id = finished
    s = open_store(store)
    [g] = s.read_rows("gate_decisions", run_id)
    evidence = json.loads(g.evidence_json)
    evals = distillates(store, run_id, "cover_eval")
    trained = {(e["bench"], e["seed"]): e["auc"] for e in evals if e["ckpt"] == 2}
    base = {(e["bench"], e["seed"]): e["auc"] for e in evals if e["ckpt"] == 0}
    assert len(trained) == len(base) == 4
    assert g.delta == pytest.approx(sum(trained[k] - base[k] for k in trained) / 4)
    assert g.ci_low <= g.delta <= g.ci_high and g.decision == ("accept" if evidence["accept"] else "reject")
    assert evidence["accept"] == (g.ci_low > 0 and len(evidence["collapsed"]) <= 2)
    [reg] = s.read_rows("registry", run_id)
    assert reg.name == "codemidas/cover-tests" and 0.0 <= reg.holdout_score <= 1.0
    assert (reg.alias == "champion") == (g.decision == "accept")
    [cand] = [c for c in s.read_rows("candidates", run_id) if c.candidate_id == reg.candidate_id]
    artifact = json.loads(s.get_blob(reg.candidate_id))
    assert hashlib.sha256(s.get_blob(reg.candidate_id)).hexdigest() == reg.candidate_id
    assert set(artifact["suites"]) == {t["task_id"] for t in kept_tasks()[:2]} and cand.proposer == "cover"
    before = {t: len(s.read_rows(t, run_id)) for t in ("candidates", "distillates", "gate_decisions", "registry")}
    cover(config=stored_config(store, run_id), store_uri=store, run_id=run_id)  # every stage again
    assert {t: len(s.read_rows(t, run_id)) for t in before} == before


def test_the_report_draws_both_policies_the_filter_and_the_paired_gate(finished, tmp_path):
    from cli.report import report_series
    from cli.report_cover import paired_auc

    store, run_id = finished
    report = report_series(store, run_id)
    series = report["series"]
    assert report["family"] == "cover" and series.steps() == [1, 2]
    assert {p["role"] for p in series.policies} == {"code", "test"} and len(series.policies) == 4
    evals = distillates(store, run_id, "cover_eval")
    assert len(paired_auc(series.evals)) == sum(e["ckpt"] == 2 and e["auc"] is not None for e in evals
                                                if any(b["ckpt"] == 0 and b["bench"] == e["bench"] and
                                                       b["seed"] == e["seed"] and b["auc"] is not None
                                                       for b in evals))
    result = runner.invoke(app, ["report", run_id, "--store", store, "--out", str(tmp_path / "cover.png")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cover.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
