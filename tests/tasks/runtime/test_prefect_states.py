"""What Prefect shows of a Ratchet run, read back from a real Prefect server: flow runs
named by the run id (derived from the flow run id when a deployment gives none), task
runs by stage and round, and a failed run's state naming the run, stage, round and cause."""

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, TaskRunFilter, TaskRunFilterFlowRunId

from flows.evolve import evolve
from schemas.configs import EvolveConfig, RunConfig
from storage.store import open_store
from tasks.runtime.failpoints import InjectedFailure
from tasks.runtime.prefect_states import StageFailed

pytestmark = [pytest.mark.integration]


def config() -> RunConfig:
    return RunConfig(loop="evolve", suite="circle_packing", budget=2, seed=1, workers=2, tracking=False,
                     evolve=EvolveConfig(children_per_round=2))


def flow_run_named(name: str):
    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
        tasks = client.read_task_runs(task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=[run.id])))
    return run, sorted(t.name for t in tasks)


def test_flow_and_task_runs_are_named_by_run_and_round(prefect_server, tmp_path):
    evolve(config=config(), store_uri=str(tmp_path / "s"), run_id="named-run")
    run, tasks = flow_run_named("named-run")
    assert run.state.is_completed()
    assert {"sample r0000", "execute r0000", "score r0000", "gate r0000", "register r0000",
            "sample r0001", "execute r0001", "gate r0001", "register r0001", "start-run"} <= set(tasks)


def test_a_run_without_an_id_takes_it_from_its_flow_run(prefect_server, tmp_path):
    summary = evolve(config=config(), store_uri=str(tmp_path / "s"))
    run_id = summary["run_id"]
    run, _ = flow_run_named(run_id)
    assert run_id == f"evolve-{run.id}"
    assert {r.prefect_flow_run_id for r in open_store(str(tmp_path / "s")).read_rows("runs")} == {str(run.id)}


def test_a_failed_stage_is_named_in_the_run_and_the_flow_run_state(prefect_server, tmp_path, monkeypatch):
    monkeypatch.setenv("RATCHET_FAIL_AT", "register:1")
    with pytest.raises(StageFailed) as raised:
        evolve(config=config(), store_uri=str(tmp_path / "s"), run_id="failing-run")
    expected = ("ratchet run failing-run: stage register r0001 failed: InjectedFailure: failure injected at "
                "register:1 (RATCHET_FAIL_AT)")
    assert str(raised.value) == expected
    assert isinstance(raised.value.__cause__, InjectedFailure)
    (failed,) = [r for r in open_store(str(tmp_path / "s")).read_rows("runs") if r.status == "failed"]
    assert failed.error == expected
    run, _ = flow_run_named("failing-run")
    assert run.state.is_failed() and expected in run.state.message
