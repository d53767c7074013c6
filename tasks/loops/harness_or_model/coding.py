"""harness_or_model on codemidas, the work of its execute and score stages (the Prefect
tasks in `stages` call these). Tasks: the first ``harness_or_model.codemidas_tasks``
kept codemidas tasks, in shipped order.

execute: per noise seed and arm, one run (`episode.run_episode`) per task; every body the
policy writes runs in the run's sandbox on the task's visible (train) and hidden holdout
tests in one batch (each distinct body once per seed: both arms write the same ones); the
policy only ever gets the arm's feedback on the visible ones. One execution row per run,
its output the trace and the answer's raw holdout outputs.
score: the suite's trusted scorer on the answer's holdout outputs (solved = every hidden
holdout test passes), and the counts and usage of the trace."""

from __future__ import annotations

import json
import time
from typing import Any

from schemas.ids import content_id, derived_id
from schemas.rows import ExecutionRow
from suites.base import Case, CaseResult
from suites.codemidas.fuzz import outcome
from suites.codemidas.suite import CodeMidas, kept_tasks
from suites.executors import make_executor
from suites.executors.base import Executor
from tasks.loops.harness_or_model.arms import Arm
from tasks.loops.harness_or_model.episode import prompt_of, run_episode, trace_metrics, usage_of_trace
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.stages.execute import part_key
from tasks.stages.score import blob_id

UNDOCUMENTED = "(no docstring:"
"""How a task's spec says it has no docstring (`suites.codemidas.hollow.spec_of`)."""


def codemidas_tasks(ref: RunRef) -> list[dict[str, Any]]:
    return kept_tasks()[:run_config(ref).harness_or_model.codemidas_tasks]


def groups_of(tasks: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The pre-registered subgroups on codemidas, fixed by the spec alone before any run:
    tasks whose spec has a docstring and those whose behaviour only the tests define."""
    documented = [t["task_id"] for t in tasks if UNDOCUMENTED not in t["spec"]]
    undocumented = [t["task_id"] for t in tasks if UNDOCUMENTED in t["spec"]]
    return {"documented": documented, "undocumented": undocumented}


class Runner:
    """Bodies run in the sandbox on a task's visible and holdout tests, each distinct
    (task, body) once."""

    def __init__(self, executor: Executor):
        self.executor, self.results, self.wall_s = executor, {}, 0.0

    def run(self, task: dict[str, Any], source: str) -> dict[str, CaseResult]:
        key = (task["task_id"], content_id(source))
        if key not in self.results:
            suite = CodeMidas(task["task_id"])
            cases = [c for c in suite.cases() if c.split in ("train", "holdout")]
            started = time.perf_counter()
            got = self.executor.run(source, suite.runner_source(), suite.entrypoint, cases)
            self.wall_s += time.perf_counter() - started
            self.results[key] = {r.case_id: r for r in got}
        return self.results[key]

    def visible(self, task: dict[str, Any], source: str, cases: list[Case]) -> list[str | None]:
        got = self.run(task, source)
        return [outcome(got[c.case_id].output) if got[c.case_id].status == "ok" else None for c in cases]


def visible_tests(task: dict[str, Any]) -> tuple[list[Case], list[dict[str, Any]]]:
    """The train cases of a task and their tests ({args, expect}): what a harness may show."""
    cases = [c for c in CodeMidas(task["task_id"]).cases() if c.split == "train"]
    return cases, [task["tests"][int(c.case_id.rsplit("#", 1)[1])] for c in cases]


def episode_row(ref: RunRef, runner: Runner, task: dict[str, Any], arm: Arm, arm_id: str,
                seed_index: int) -> ExecutionRow:
    """One run of the policy under ``arm`` on ``task``, as its execution row."""
    store, started = store_for(ref.store_uri), runner.wall_s
    cases, tests = visible_tests(task)
    trace = run_episode(task, arm, seed_index, tests, lambda source: runner.visible(task, source, cases))
    holdout = {}
    if trace["answer"] is not None:
        hidden = {c.case_id for c in CodeMidas(task["task_id"]).cases() if c.split == "holdout"}
        holdout = {cid: {"status": r.status, "output": r.output} for cid, r in runner.run(task, trace["answer"]).items()
                   if cid in hidden}
    blob = store.put_blob(json.dumps({"trace": trace, "holdout": holdout}, sort_keys=True).encode())
    return ExecutionRow(run_id=ref.run_id, execution_id=derived_id(ref.run_id, arm_id, task["task_id"], seed_index, 0),
                        candidate_id=arm_id, case_id=task["task_id"], split="holdout", seed=seed_index, noise_key=None,
                        attempt=0, status="ok", error=None, wall_s=runner.wall_s - started, cpu_s=None,
                        peak_rss_mb=None, tokens_in=None, tokens_out=None, cost_usd=None,
                        output_uri=store.blob_uri(blob), trajectory_uri=None)


def execute_codemidas(ref: RunRef, stage_tag: str, seed_index: int, arms: tuple[Arm, ...],
                      ids: dict[str, str]) -> None:
    """execute: every pending arm's runs on every task under this seed, one part per arm."""
    store = store_for(ref.store_uri)
    pending = [a for a in arms if not store.has_part("executions", ref.run_id, "execute",
                                                       part_key(stage_tag, ids[a.name]))]
    runner = Runner(make_executor(run_config(ref).sandbox))
    for arm in pending:
        rows = [episode_row(ref, runner, task, arm, ids[arm.name], seed_index) for task in codemidas_tasks(ref)]
        store.write_part("executions", ref.run_id, "execute", part_key(stage_tag, ids[arm.name]), rows)


def codemidas_record(store, execution: ExecutionRow, arm: Arm) -> tuple[dict[str, float], str | None]:
    """(metrics, None) of a recorded run: the trusted scorer on the answer's holdout
    outputs, the trace's counts and the usage the arm reports."""
    found = json.loads(store.get_blob(blob_id(execution.output_uri)))
    trace, suite = found["trace"], CodeMidas(execution.case_id)
    holdout = [c for c in suite.cases() if c.split == "holdout"]
    passed = sum(suite.score(c, found["holdout"][c.case_id]["output"]).metrics["pass"] for c in holdout
                 if found["holdout"].get(c.case_id, {}).get("status") == "ok")
    usage = usage_of_trace(trace, prompt_of(suite.task, arm), arm)
    return {**trace_metrics(trace, int(passed), len(holdout)), **usage, "usage_missing": 0.0}, None
