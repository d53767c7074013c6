"""The rsiagent loop end to end on the real engine, store and toolsim, at a tiny size:
3 practice rounds (2 breadth, 1 depth) of 6 tasks, then the frozen memory on the target
split. The target split is never read while the memory is built, which the tables prove."""

import json

import pytest

from flows.rsiagent import rsiagent
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from suites.toolsim.suite import ToolSim

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "gate_decisions", "registry", "steps", "rsa_practice", "rsa_runs", "rsa_memory",
          "rsa_test_runs")


def small_config() -> RunConfig:
    return RunConfig(loop="rsiagent", suite="toolsim", budget=3, seed=0, workers=2, tracking=False,
                     suite_params={"instances_per_template": 5},
                     rsiagent={"tasks_per_round": 6, "breadth_rounds": 2, "params_per_template": 1})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("rsiagent") / "store")
    summary = rsiagent(config=small_config(), store_uri=root, run_id="rsa-a")
    return open_store(root), root, summary


def test_the_target_split_is_never_read_while_the_memory_is_built(run):
    store, root, _ = run
    split = {c.case_id: c.split for c in ToolSim(instances_per_template=5).cases()}
    practice = store.read_rows("rsa_practice")
    assert practice and {split[p.source_case] for p in practice} == {"train"}
    assert {json.loads(p.spec)["source_case"] for p in practice} == {p.source_case for p in practice}
    tasks = {p.task_id for p in practice}
    assert {r.task_id for r in store.read_rows("rsa_runs")} <= tasks
    executions = {s.execution_id for s in store.read_rows("steps", "rsa-a")}
    assert {r.artifact_ref for r in store.read_rows("rsa_runs", "rsa-a")} <= executions
    gated = {c for d in store.read_rows("gate_decisions") for c in json.loads(d.evidence_json)["cases"]}
    assert gated and {split[c] for c in gated} == {"select"}
    # every target run happened after the freeze, under a snapshot that existed by then
    freeze = max(r.event_at for r in store.read_rows("registry") if r.stage == "stable")
    known = {c.candidate_id for c in store.read_rows("candidates")}
    tests = store.read_rows("rsa_test_runs")
    assert {split[t.task_id] for t in tests} == {"test"} and {t.arm for t in tests} == {"frozen", "none", "breadth"}
    assert {t.mem_snapshot for t in tests if t.arm != "none"} <= known
    frozen = {r.candidate_id for r in store.read_rows("registry") if r.stage == "stable"}
    assert {t.mem_snapshot for t in tests if t.arm == "frozen"} == frozen
    assert freeze is not None
    leaked = sql(store, "SELECT count(*) AS n FROM rsa_runs r JOIN rsa_practice p USING (run_id, task_id) "
                        "WHERE p.source_case NOT LIKE '%/000'").to_pylist()  # instance 0 is the only train one
    assert leaked == [{"n": 0}]


def test_memory_versions_are_content_candidates_gated_with_evidence(run):
    store, _, summary = run
    candidates = {c.candidate_id: c for c in store.read_rows("candidates")}
    for cid in candidates:
        assert store.get_blob(cid) and __import__("hashlib").sha256(store.get_blob(cid)).hexdigest() == cid
    decisions = [d for d in store.read_rows("gate_decisions") if d.gate == "rsiagent_memory"]
    assert len(decisions) == 3
    verified = {r.id for r in store.read_rows("rsa_runs") if r.role == "attempt"}
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        assert len(evidence["cases"]) == d.n_cases and d.delta == pytest.approx(
            (sum(evidence["candidate"]) - sum(evidence["baseline"])) / d.n_cases)
        assert d.decision == ("accept" if d.candidate_id != d.baseline_id and d.delta >= 0 else "reject")
        for entry in evidence["entries"]:
            assert set(entry["source_runs"]) <= verified
    accepted = [d.candidate_id for d in decisions if d.decision == "accept"]
    champions = [r.candidate_id for r in store.read_rows("registry") if r.stage == "experimental"]
    assert champions == accepted and accepted  # the tiny run admits at least one version
    versions = {m.ver for m in store.read_rows("rsa_memory")}
    assert versions <= set(candidates)
    assert summary["memory versions"].endswith("of 3 admitted")


def test_every_memory_entry_comes_from_a_verified_recovery(run):
    store, _, _ = run
    recoveries = [r for r in store.read_rows("rsa_runs") if r.role == "recovery"]
    attempts = {r.id: r for r in store.read_rows("rsa_runs") if r.role == "attempt"}
    for entry in store.read_rows("rsa_memory"):
        for source in entry.source_runs:
            failed = attempts[source]
            assert not failed.verdict
            assert any(r.task_id == failed.task_id and r.verdict for r in recoveries)


def test_a_rerun_writes_nothing_and_the_next_run_starts_from_the_champion(run, prefect_server):
    store, root, summary = run
    before = counts(store)
    assert rsiagent(config=small_config(), store_uri=root, run_id="rsa-a") == summary
    assert counts(store) == before
    rsiagent(config=small_config(), store_uri=root, run_id="rsa-b")
    start = next(c for c in store.read_rows("candidates", "rsa-b") if c.operator == "start")
    frozen = [r for r in store.read_rows("registry", "rsa-a") if r.stage == "stable"][0]
    assert start.candidate_id == frozen.candidate_id and "champion" in start.summary


def test_the_report_draws_what_the_test_runs_say(run, tmp_path):
    from cli.report import report_series, write_report

    store, root, _ = run
    series = report_series(root, "rsa-a")["series"]
    tests = store.read_rows("rsa_test_runs", "rsa-a")
    frozen = next(a for a in series.arms if a["arm"] == "frozen")
    mine = [t for t in tests if t.arm == "frozen"]
    none = {t.task_id: t.binary for t in tests if t.arm == "none"}
    assert frozen["binary"] == pytest.approx(sum(t.binary for t in mine) / len(mine))
    assert frozen["delta"] == pytest.approx(sum(t.binary - none[t.task_id] for t in mine) / len(mine))
    assert [a["arm"] for a in series.arms] == ["frozen", "breadth", "none"]
    assert [r["phase"] for r in series.rounds] == ["breadth", "breadth", "depth"]
    path = write_report(root, "rsa-a", tmp_path / "rsiagent.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
