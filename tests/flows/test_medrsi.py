"""The medrsi loop end to end on the real engine, store, sandbox and toolsim, at a tiny
budget: every stage's rows are queryable in SQL, each decision can be recomputed from
the scores table, and re-running the same run id adds nothing."""

import json
from statistics import fmean

import pytest

from flows.medrsi import medrsi
from schemas.admission import MedRSIConfig
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "executions", "scores", "steps", "distillates", "gate_decisions", "registry")


def small_config() -> RunConfig:
    return RunConfig(loop="medrsi", suite="toolsim", budget=3, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 5},
                     medrsi=MedRSIConfig(trial_batches=1, batch_size=4))


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("medrsi")
    summary = medrsi(config=small_config(), store_uri=str(root), run_id="medrsi-a")
    store = open_store(str(root))
    before = counts(store)
    again = medrsi(config=small_config(), store_uri=str(root), run_id="medrsi-a")
    return store, summary, before, again


def success(store, candidate: str, case_ids) -> dict[str, float]:
    rows = [s for s in store.read_rows("scores") if s.candidate_id == candidate and s.metric == "success"]
    return {s.case_id: s.value for s in rows if s.case_id in case_ids}


def balanced(values: dict[str, float]) -> float:
    by_template: dict[str, list[float]] = {}
    for case_id, value in values.items():
        by_template.setdefault(case_id.split("/")[0], []).append(value)
    return fmean(fmean(v) for v in by_template.values())


def test_rerunning_the_same_run_adds_nothing(run):
    store, summary, before, again = run
    assert counts(store) == before
    assert {k: v for k, v in again.items()} == summary
    # a candidate is scored once per case and metric, whatever stage ran it
    keys = [(s.candidate_id, s.case_id, s.metric) for s in store.read_rows("scores")]
    assert len(keys) == len(set(keys))


def test_failure_priority_is_count_times_severity_and_tools_come_from_clusters(run):
    store, summary, _, _ = run
    failures = [json.loads(r.content) for r in store.read_rows("distillates") if r.kind == "failure"]
    assert failures and all(f["label"] == 1.0 and f["severity"] > 0 for f in failures)
    for f in failures:
        members = [g["severity"] for g in failures if g["round"] == f["round"] and g["cluster_id"] == f["cluster_id"]]
        assert f["priority"] == pytest.approx(len(members) * fmean(members)) and f["cluster_size"] == len(members)
    tools = [r for r in store.read_rows("distillates") if r.kind == "tool" and r.status == "proposed"]
    assert len(tools) == summary["discovered"] >= 1
    for tool in tools:
        spec = json.loads(tool.content)
        assert spec["cluster_id"] in {f["cluster_id"] for f in failures if f["round"] == tool.round}
        assert spec["frozen"]["code_id"] == tool.distillate_id and spec["edit"] in ("add_rule", "put_skill")


def test_discovery_decisions_recompute_from_the_scores(run):
    store, _, _, _ = run
    train = {c.case_id for c in store.read_rows("executions") if c.split == "train"}
    decisions = [d for d in store.read_rows("gate_decisions") if d.gate == "medrsi_discovery"]
    assert decisions
    for d in decisions:
        gain = balanced(success(store, d.candidate_id, train)) - balanced(success(store, d.baseline_id, train))
        assert d.delta == pytest.approx(gain)
        assert d.decision == ("trial" if gain > 1e-12 else "reject")


def test_registration_follows_mean_gain_and_cost_over_the_trial_batches(run):
    store, summary, _, _ = run
    decisions = [d for d in store.read_rows("gate_decisions") if d.gate == "medrsi_registration"]
    assert decisions, "a tool admitted in round 1 or 2 is weighed after one later batch"
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        if evidence.get("retest") or d.decision == "trial":
            continue
        (batch,) = evidence["batches"]
        cases = {e.case_id for e in store.read_rows("executions")
                 if e.candidate_id == d.candidate_id and e.split in ("select", "protected")}
        assert batch["metric_with"] == pytest.approx(balanced(success(store, d.candidate_id, cases)))
        gain_ok = batch["metric_with"] - batch["metric_without"] > 1e-12
        cost_ok = batch["cost_with"] <= batch["cost_without"] + 1e-12
        assert d.decision == ("accept" if gain_ok and cost_ok else "reject")
    assert summary["registered"] == sum(d.decision == "accept" for d in decisions)


def test_every_registry_transition_points_at_a_decision_that_explains_it(run):
    store, summary, _, _ = run
    rows = sql(store, """
        SELECT r.name, r.stage, r.alias, d.gate, d.decision, d.reason
        FROM registry r JOIN gate_decisions d USING (decision_id)
        ORDER BY r.name, r.version""").to_pylist()
    assert len(rows) == len(store.read_rows("registry"))
    expected = {("experimental", "medrsi_discovery"): "trial", ("experimental", "medrsi_registration"): "trial",
                ("stable", "medrsi_registration"): "accept", ("retired", "medrsi_registration"): "reject"}
    for row in rows:
        if row["name"] == "toolsim/medrsi":
            assert row["stage"] == "stable" and row["alias"] == "champion" and row["decision"] == "accept"
        else:
            assert expected[(row["stage"], row["gate"])] == row["decision"]
            assert row["reason"].startswith(row["decision"])
    stable = {r.candidate_id for r in store.read_rows("registry") if r.name == "toolsim/medrsi"}
    assert len(stable) == summary["stable_versions"] == 1 + summary["registered"]
    # holdout is measured for registered (stable) harnesses only, and all of them
    assert {e.candidate_id for e in store.read_rows("executions") if e.split == "holdout"} == stable
    assert all(r.holdout_score is not None for r in store.read_rows("registry") if r.name == "toolsim/medrsi")
