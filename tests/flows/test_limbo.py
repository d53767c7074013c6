"""The limbo loop end to end on the real engine, store and toolsim, at a tiny size:
a 12-request stream in blocks of 5 under the controller and two fixed arms. Every
memory version is a content-id candidate, every request a gate decision with its
evidence, the current memory a registry alias; a rerun writes nothing new."""

import hashlib
import json

import pytest

from flows.limbo import limbo
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from suites.toolsim.suite import ToolSim

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "gate_decisions", "registry", "steps", "limbo_arms", "limbo_stream", "limbo_memory")


def small_config() -> RunConfig:
    return RunConfig(loop="limbo", suite="toolsim", budget=12, seed=0, tracking=False,
                     suite_params={"instances_per_template": 5},
                     limbo={"block": 5, "capacity": 4, "fixed_arms": ["none-full", "retrieval-lean"],
                            "resamples": 200})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("limbo") / "store")
    summary = limbo(config=small_config(), store_uri=root, run_id="limbo-a")
    return open_store(root), root, summary


def test_every_policy_runs_the_same_stream_of_train_requests(run):
    store, _, summary = run
    rows = store.read_rows("limbo_stream", "limbo-a")
    by = {}
    for r in rows:
        by.setdefault(r.policy, []).append(r)
    assert set(by) == {"controller", "fixed:none-full", "fixed:retrieval-lean"}
    tasks = {p: [r.task_id for r in sorted(v, key=lambda r: r.t)] for p, v in by.items()}
    assert all(len(v) == 12 and v == tasks["controller"] for v in tasks.values())
    split = {c.case_id: c.split for c in ToolSim(instances_per_template=5).cases()}
    assert {split[t.split("@")[0]] for t in tasks["controller"]} == {"train"}
    assert {r.arm for r in by["fixed:none-full"]} == {"none-full"}
    ctrl = by["controller"]
    assert all(r.p_pred is not None and r.bonus >= 0 for r in ctrl)
    assert all(r.cost == pytest.approx(r.tokens / 1000) for r in rows)
    assert "controller" in summary and "Δacc" in summary["fixed:none-full"]
    assert len(store.read_rows("limbo_arms", "limbo-a")) == 8


def test_memory_versions_are_gated_candidates_and_the_alias_is_the_latest(run):
    store, root, _ = run
    decisions = sorted((d for d in store.read_rows("gate_decisions", "limbo-a") if d.gate == "limbo_admission"),
                       key=lambda d: d.round)
    ctrl = {r.t: r for r in store.read_rows("limbo_stream", "limbo-a") if r.policy == "controller"}
    assert [d.round for d in decisions] == sorted(ctrl)
    candidates = {c.candidate_id for c in store.read_rows("candidates", "limbo-a")}
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        assert d.decision == ("accept" if ctrl[d.round].success else "reject") and evidence["t"] == d.round
        if d.decision == "accept":
            assert d.candidate_id in candidates and len(evidence["admitted"]) == 1
            assert hashlib.sha256(store.get_blob(d.candidate_id)).hexdigest() == d.candidate_id
            memory = json.loads(store.get_blob(d.candidate_id))["entries"]
            assert len(memory) <= 4 and memory[-1]["t_added"] == d.round
    steps = {s.execution_id for s in store.read_rows("steps", "limbo-a")}
    assert {r.execution_id for r in ctrl.values()} <= steps
    alias = sql(store, "SELECT candidate_id, holdout_score FROM registry WHERE name = 'toolsim/limbo' "
                       "ORDER BY version DESC LIMIT 1").to_pylist()[0]
    assert alias["candidate_id"] == ctrl[max(ctrl)].mem_ver and 0.0 <= alias["holdout_score"] <= 1.0
    held = store.read_rows("limbo_memory", "limbo-a")
    admitted = sum(r.success for r in ctrl.values())
    assert sum(r.policy == "controller" for r in held) == admitted
    assert sum(r.policy == "controller" and r.evicted_t is None for r in held) == min(4, admitted)


def test_a_rerun_writes_nothing_new(run):
    store, root, summary = run
    before = counts(store)
    again = limbo(config=small_config(), store_uri=root, run_id="limbo-a")
    assert counts(open_store(root)) == before and again["controller"] == summary["controller"]


def test_report_draws_the_frontier_of_every_policy(run, tmp_path):
    from cli.report import report_series, write_report

    store, root, _ = run
    report = report_series(root, "limbo-a")
    assert report["family"] == "limbo"
    policies = {p["policy"]: p for p in report["series"].policies}
    rows = store.read_rows("limbo_stream", "limbo-a")
    for name, p in policies.items():
        mine = [r for r in rows if r.policy == name]
        assert p["accuracy"] == pytest.approx(sum(r.success for r in mine) / len(mine))
        assert p["tokens"] == pytest.approx(sum(r.tokens for r in mine) / len(mine))
    ctrl = {r.t: r.success for r in rows if r.policy == "controller"}
    fixed = {r.t: r.success for r in rows if r.policy == "fixed:none-full"}
    assert policies["fixed:none-full"]["delta"] == pytest.approx(sum(ctrl[t] - fixed[t] for t in ctrl) / 12)
    assert sum(c["picks"] for c in report["series"].choices) == 12
    assert write_report(root, "limbo-a", tmp_path / "limbo.png").stat().st_size > 0
