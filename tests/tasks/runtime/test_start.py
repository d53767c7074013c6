"""Where a run starts: the store's latest champion of its registry name (any earlier
run's), recorded once; a changed scorer is called a re-baseline, never compared."""

import json
from datetime import datetime, timedelta, timezone

from schemas.configs import RunConfig
from schemas.rows import RegistryRow, RunRow
from storage.store import open_store
from tasks.runtime.start import StartPoint, latest_champion, recorded_start, resolve_start, start_note

T0 = datetime(2026, 12, 1, tzinfo=timezone.utc)


def registry(run_id: str, version: int, candidate: str, hours: int, name="circle_packing/evolve", alias="champion"):
    return RegistryRow(run_id=run_id, name=name, version=version, candidate_id=candidate, stage="stable", alias=alias,
                       decision_id=f"d-{candidate}", select_score=float(version), holdout_score=None,
                       event_at=T0 + timedelta(hours=hours))


def started(run_id: str, scorer: str) -> RunRow:
    return RunRow(run_id=run_id, loop="evolve", suite="circle_packing", status="running", event_at=T0, started_at=T0,
                  finished_at=None, parent_run_id=None, prefect_flow_run_id=None, mlflow_run_id=None,
                  code_version="c", error=None, config_json=json.dumps({"config": {}, "scorer_version": scorer}))


def config(start_from="champion") -> RunConfig:
    return RunConfig(loop="evolve", suite="circle_packing", budget=2, start_from=start_from)


def test_the_latest_champion_of_the_name_wins_across_runs():
    rows = [registry("a", 1, "x", 1), registry("a", 2, "y", 2), registry("b", 1, "z", 3),
            registry("c", 1, "w", 9, name="bin_packing/evolve"), registry("d", 1, "v", 8, alias=None)]
    assert latest_champion(rows, "circle_packing/evolve", "new").candidate_id == "z"
    assert latest_champion(rows, "circle_packing/evolve", "b").candidate_id == "y"  # never a run's own rows
    assert latest_champion(rows, "bin_packing/evolve", "new").candidate_id == "w"
    assert latest_champion(rows, "toolsim/self_healing", "new") is None


def test_resolve_start_reads_the_champion_and_the_scorer_it_was_registered_under(tmp_path):
    store = open_store(str(tmp_path / "s"))
    store.write_part("runs", "a", "status", "running", [started("a", "scorer-1")])
    store.write_part("registry", "a", "register", "r0000", [registry("a", 1, "x", 1), registry("a", 2, "y", 2)])
    start = resolve_start(store, config(), "b")
    assert start == StartPoint(candidate_id="y", run_id="a", decision_id="d-y", select_score=2.0,
                               scorer_version="scorer-1")
    assert resolve_start(store, config("seed"), "b") is None
    assert resolve_start(open_store(str(tmp_path / "empty")), config(), "b") is None  # first run: the seed
    assert recorded_start(json.dumps({"start": start.model_dump()})) == start
    assert recorded_start(json.dumps({"start": None})) is None
    assert recorded_start(json.dumps({})) is None  # a run recorded before start points existed


def test_a_changed_scorer_is_a_re_baseline():
    start = StartPoint(candidate_id="abcdef0123456789", run_id="a", decision_id="d", select_score=2.5,
                       scorer_version="old")
    same = start_note(start, "old")
    assert same == "the champion abcdef012345 of run a (select score 2.5), re-scored under the same scorer old"
    changed = start_note(start, "new")
    assert changed.startswith("re-baseline: the champion abcdef012345 of run a, registered under scorer old, "
                              "re-scored under this run's scorer new")
