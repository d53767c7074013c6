"""The mace loop end to end on the real engine, store and toolsim, at a tiny size: 2
co-learning rounds of 8 requests, then the frozen memory, the feedback-off memory and no
memory on the test split. Memory versions are content candidates gated with evidence on
select only; a rerun writes nothing; the next run starts from the champion."""

import hashlib
import json

import pytest

from flows.mace import mace
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from suites.toolsim.suite import ToolSim

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "gate_decisions", "registry", "steps", "mace_units", "mace_relations", "mace_injections",
          "mace_outputs", "mace_runs")


def small_config(**overrides) -> RunConfig:
    fields = {"loop": "mace", "suite": "toolsim", "budget": 2, "seed": 0, "workers": 2, "tracking": False,
              "suite_params": {"instances_per_template": 5}, "mace": {"batch": 8}}
    return RunConfig(**{**fields, **overrides})


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("mace") / "store")
    summary = mace(config=small_config(), store_uri=root, run_id="mace-a")
    return open_store(root), root, summary


def test_splits_injections_and_outputs(run):
    store, _, summary = run
    split = {c.case_id: c.split for c in ToolSim(instances_per_template=5).cases()}
    injections = store.read_rows("mace_injections", "mace-a")
    assert len(injections) == 2 * 8 * 4 and {split[i.task_id] for i in injections} == {"train"}
    assert {(i.agent_role, i.stage) for i in injections} <= {("intake", 0), ("lookup", 1), ("action", 2),
                                                            ("verify", 3)}
    assert all((i.form == "none") == (not i.unit_ids) and len(i.unit_ids) <= i.budget for i in injections)
    units = {u.unit_id for u in store.read_rows("mace_units", "mace-a")}
    assert {u for i in injections for u in i.unit_ids} <= units
    outputs = store.read_rows("mace_outputs", "mace-a")
    steps = sql(store, "SELECT execution_id, count(*) AS n FROM steps WHERE run_id = 'mace-a' GROUP BY 1").to_pylist()
    per_episode = {}
    for o in outputs:
        per_episode[o.episode_id] = per_episode.get(o.episode_id, 0) + o.n_steps
    assert per_episode == {r["execution_id"]: r["n"] for r in steps}
    gated = {c for d in store.read_rows("gate_decisions", "mace-a") for c in json.loads(d.evidence_json)["cases"]}
    assert gated and {split[c] for c in gated} == {"select"}
    tests = [r for r in store.read_rows("mace_runs", "mace-a") if r.phase == "test"]
    assert {split[t.task_id] for t in tests} == {"test"} and {t.arm for t in tests} == {"memory", "no_feedback",
                                                                                       "no_memory"}
    assert summary["test memory"].startswith("success ")


def test_memory_versions_are_content_candidates_gated_with_evidence(run):
    store, _, summary = run
    for c in store.read_rows("candidates", "mace-a"):
        assert hashlib.sha256(store.get_blob(c.candidate_id)).hexdigest() == c.candidate_id
    decisions = store.read_rows("gate_decisions", "mace-a")
    assert len(decisions) == 2
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        assert len(evidence["cases"]) == d.n_cases and d.delta == pytest.approx(
            (sum(evidence["candidate"]) - sum(evidence["baseline"])) / d.n_cases)
        assert d.decision == ("accept" if d.candidate_id != d.baseline_id and d.delta >= 0 else "reject")
    accepted = [d.candidate_id for d in decisions if d.decision == "accept"]
    assert [r.candidate_id for r in store.read_rows("registry", "mace-a") if r.stage == "experimental"] == accepted
    stable = [r for r in store.read_rows("registry", "mace-a") if r.stage == "stable"]
    assert len(stable) == 1 and 0.0 <= stable[0].holdout_score <= 1.0
    assert {u.ver for u in store.read_rows("mace_units", "mace-a")} <= {c.candidate_id for c in
                                                                          store.read_rows("candidates", "mace-a")}


def test_a_rerun_writes_nothing_and_the_next_run_starts_from_the_champion(run, prefect_server):
    store, root, summary = run
    before = counts(store)
    assert mace(config=small_config(), store_uri=root, run_id="mace-a") == summary
    assert counts(store) == before
    mace(config=small_config(budget=1, start_from="champion"), store_uri=root, run_id="mace-b")
    start = next(c for c in store.read_rows("candidates", "mace-b") if c.operator == "start")
    frozen = [r for r in store.read_rows("registry", "mace-a") if r.stage == "stable"][0]
    assert start.candidate_id == frozen.candidate_id and "champion" in start.summary


def test_the_report_draws_what_the_test_runs_say(run, tmp_path):
    from cli.report import report_series, write_report

    store, root, _ = run
    series = report_series(root, "mace-a")["series"]
    tests = [r for r in store.read_rows("mace_runs", "mace-a") if r.phase == "test"]
    mine = [t for t in tests if t.arm == "memory"]
    none = {t.task_id: t.result for t in tests if t.arm == "no_memory"}
    memory = next(a for a in series.arms if a["arm"] == "memory")
    assert memory["success"] == pytest.approx(sum(t.result for t in mine) / len(mine))
    assert memory["delta"] == pytest.approx(sum(t.result - none[t.task_id] for t in mine) / len(mine))
    assert [a["arm"] for a in series.arms] == ["memory", "no_feedback", "no_memory"]
    assert [r["round"] for r in series.rounds] == [0, 1] and all(sum(r["forms"].values()) == 32 for r in series.rounds)
    path = write_report(root, "mace-a", tmp_path / "mace.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
