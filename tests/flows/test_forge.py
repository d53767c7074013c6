"""The forge loop end to end on the real engine, store and toolsim, at a tiny size: 3
steps of a 6-instance batch with patience 1, so the data gate opens. The validation
(select) split is the only one the prompt gate decides on, synthetic instances join only
the training set and only once verified, and the held-out split is read once, at the end."""

import hashlib
import json

import pytest

from flows.forge import forge
from schemas.configs import RunConfig
from storage.catalog import sql
from storage.store import open_store
from suites.toolsim.suite import ToolSim

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TABLES = ("candidates", "gate_decisions", "registry", "steps", "fg_prompts", "fg_trajs", "fg_failure_modes",
          "fg_synth", "fg_stagnation", "fg_cost")


def small_config(**extra) -> RunConfig:
    fields = {"budget": 4, "seed": 0, "workers": 1, "tracking": False, **extra}
    return RunConfig(loop="forge", suite="toolsim", suite_params={"instances_per_template": 5},
                     forge={"batch_size": 8, "patience": 1}, **fields)


def counts(store) -> dict[str, int]:
    return {table: len(store.read_rows(table)) for table in TABLES}


@pytest.fixture(scope="module")
def run(prefect_server, tmp_path_factory):
    root = str(tmp_path_factory.mktemp("forge") / "store")
    summary = forge(config=small_config(), store_uri=root, run_id="fg-a")
    return open_store(root), root, summary


SPLIT = {c.case_id: c.split for c in ToolSim(instances_per_template=5).cases()}


def test_the_prompt_gate_decides_on_validation_only_after_the_batch(run):
    store, _, _ = run
    decisions = [d for d in store.read_rows("gate_decisions", "fg-a") if d.gate == "forge_prompt"]
    assert decisions
    for d in decisions:
        evidence = json.loads(d.evidence_json)
        batch = evidence["batch"]
        assert {SPLIT.get(i, "synthetic") for i in batch["instances"]} <= {"train", "synthetic"}
        improved = sum(batch["candidate"]) > sum(batch["current"])
        assert (d.n_cases > 0) == improved and {SPLIT[c] for c in evidence["cases"]} <= {"select"}
        if improved:
            assert d.delta == pytest.approx((sum(evidence["candidate"]) - sum(evidence["baseline"])) / d.n_cases)
            assert (d.decision == "accept") == (sum(evidence["candidate"]) > sum(evidence["baseline"]))
        else:
            assert d.decision == "reject"
    prompts = {(p.step, p.id): p for p in store.read_rows("fg_prompts", "fg-a")}
    for d in decisions:
        assert prompts[(d.round, d.candidate_id)].accepted == (d.decision == "accept")
    champions = [r.candidate_id for r in store.read_rows("registry", "fg-a")
                 if r.name == "toolsim/forge" and r.stage == "experimental"]
    assert champions == [d.candidate_id for d in decisions if d.decision == "accept"]


def test_synthetic_instances_are_verified_and_join_only_the_training_set(run):
    store, root, _ = run
    synth = store.read_rows("fg_synth", "fg-a")
    stagnant = [s for s in store.read_rows("fg_stagnation", "fg-a") if s.synthesized]
    assert stagnant and synth
    for s in synth:
        assert (s.added_step is not None) == (s.valid and s.targets_mode)
        assert s.inst_id.startswith("synth/") and SPLIT[s.source_inst] == "train"
        assert s.added_step is None or s.added_step in {st.step for st in stagnant}
    added = {s.inst_id: s.added_step for s in synth if s.added_step is not None}
    for t in store.read_rows("fg_trajs", "fg-a"):
        assert t.synthetic == (t.inst_id in added) and SPLIT.get(t.inst_id, "train") == "train"
        assert not t.synthetic or added[t.inst_id] < t.step
    data = [d for d in store.read_rows("gate_decisions", "fg-a") if d.gate == "forge_data"]
    assert len(data) == len(stagnant)
    for d in data:
        listed = json.loads(d.evidence_json)["instances"]
        assert {i["inst_id"] for i in listed if i["valid"] and i["targets_mode"]} == set(d.improved_cases)
    answer = sql(store, "SELECT strategy, count(*) AS n, sum(CAST(added_step IS NOT NULL AS INT)) AS admitted "
                        "FROM fg_synth GROUP BY strategy ORDER BY strategy").to_pylist()
    assert sum(r["n"] for r in answer) == len(synth)


def test_every_version_is_a_content_candidate_and_modes_cite_real_trajectories(run):
    store, _, summary = run
    for c in store.read_rows("candidates", "fg-a"):
        assert hashlib.sha256(store.get_blob(c.candidate_id)).hexdigest() == c.candidate_id
    kinds = {c.artifact_kind for c in store.read_rows("candidates", "fg-a")}
    assert {"rules", "failure_memory", "training_set"} <= kinds
    trajs = {t.id: t for t in store.read_rows("fg_trajs", "fg-a")}
    executions = {s.execution_id for s in store.read_rows("steps", "fg-a")}
    for mode in store.read_rows("fg_failure_modes", "fg-a"):
        assert mode.support_traj_ids and all(not trajs[t].perfect for t in mode.support_traj_ids)
    assert {t for t in trajs if trajs[t].role == "current"} <= executions
    stable = [r for r in store.read_rows("registry", "fg-a") if r.stage == "stable"]
    assert len(stable) == 1 and 0.0 <= stable[0].holdout_score <= 1.0
    assert summary["holdout success"] == round(stable[0].holdout_score, 4)
    costs = store.read_rows("fg_cost", "fg-a")
    assert [c.step for c in sorted(costs, key=lambda c: c.step)] == [0, 1, 2, 3]
    assert sum(c.gen_calls for c in costs) == len(store.read_rows("fg_synth", "fg-a"))


def test_a_rerun_writes_nothing_and_the_next_run_starts_from_the_champions(run, prefect_server):
    store, root, summary = run
    before = counts(store)
    assert forge(config=small_config(), store_uri=root, run_id="fg-a") == summary
    assert counts(store) == before
    forge(config=small_config(start_from="champion", budget=1), store_uri=root, run_id="fg-b")
    seed = next(c for c in store.read_rows("candidates", "fg-b") if c.operator == "seed")
    latest = max((r for r in store.read_rows("registry", "fg-a") if r.name == "toolsim/forge"),
                 key=lambda r: r.version)
    assert seed.candidate_id == latest.candidate_id
    data = next(c for c in store.read_rows("candidates", "fg-b")
                if c.artifact_kind == "training_set" and c.operator == "start")
    held = [r for r in store.read_rows("registry", "fg-a") if r.name == "toolsim/forge-data"]
    assert held and data.candidate_id == max(held, key=lambda r: r.version).candidate_id
    assert "champion of toolsim/forge-data" in data.summary


def test_the_report_draws_what_the_tables_say(run, tmp_path):
    from cli.report import report_series, write_report

    store, root, _ = run
    series = report_series(root, "fg-a")["series"]
    stagnation = sorted(store.read_rows("fg_stagnation", "fg-a"), key=lambda s: s.step)
    assert [s["best_val"] for s in series.steps] == [s.best_val for s in stagnation]
    synth = store.read_rows("fg_synth", "fg-a")
    assert {r["strategy"]: r["admitted"] for r in series.strategies} == {
        k: sum(s.added_step is not None for s in synth if s.strategy == k) for k in {s.strategy for s in synth}}
    path = write_report(root, "fg-a", tmp_path / "forge.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
