"""The protocol's stages at their Prefect boundaries. Every stage publishes its parts
through `tasks.runtime.parts.once`, so a retry, `ratchet resume` or a second
`ratchet rescore` recomputes nothing it holds.

Where the spec's tables live: ``runs``/``final_state`` are `executions` (one per agent,
condition, task and repeat; ``noise_key`` is the condition, the stored trajectory is the
``output_uri`` blob), ``steps`` is `steps` (shown tool, arguments, observation hash),
``rescores`` are `scores` rows told apart by ``scorer_version`` (the grader-set
version), the behaviour diffs are `behaviour_diff` distillates, ``verdicts`` are
`gate_decisions` (the verdict in the evidence)."""

from __future__ import annotations

import hashlib
import json
import time

from prefect import task

from schemas.ids import derived_id
from schemas.loops import TraceRun
from schemas.rows import CandidateRow, ExecutionRow, ScoreRow, StepRow
from tasks.loops.trace.episodes import expected_state, from_json, required_tools, run_trajectory, to_json
from tasks.loops.trace.evidence import GRADERS, Trajectory, grade, version_at
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.score import blob_id

NATIVE = "1"
AGENT_TEXT = {
    "semantic": "picks the tool whose shown description is the intent's own",
    "literal": "calls the tool name it was written against, whatever the view shows",
}


def protocol_of(ref: RunRef) -> TraceRun:
    return run_config(ref)


def agent_ids(agents: tuple[str, ...]) -> dict[str, str]:
    """Agent -> candidate id: the sha256 of its description (what the candidate blob holds)."""
    return {a: hashlib.sha256(f"{a}: {AGENT_TEXT[a]}".encode()).hexdigest() for a in agents}


@task(name="sample", **STAGE_OPTIONS)
def publish_agents(ref: RunRef) -> dict[str, str]:
    """sample: the agents under test as the run's round-0 candidates, once."""
    store, agents = store_for(ref.store_uri), protocol_of(ref).trace.agents

    def rows() -> list[CandidateRow]:
        return [CandidateRow(run_id=ref.run_id, candidate_id=store.put_blob(f"{a}: {AGENT_TEXT[a]}".encode()),
                             round=0, parent_ids=[], operator="agent", proposer="fixed", artifact_kind="rules",
                             artifact_uri=store.blob_uri(agent_ids((a,))[a]), island=-1,
                             summary=f"{a}: {AGENT_TEXT[a]}") for a in agents]

    once(ref, "candidates", "sample", "agents", rows)
    return agent_ids(agents)


def repeat_tag(repeat: int) -> str:
    return f"r{repeat:02d}"


@task(name="execute", **STAGE_OPTIONS)
def execute_conditions(ref: RunRef, repeat: int, ids: dict[str, str]) -> None:
    """execute: every agent on every task under every condition (the pair shares the
    repeat's fault seed; the rerun draws its own), each trajectory stored as a blob."""
    store, section = store_for(ref.store_uri), protocol_of(ref).trace
    runs = [(agent, condition, case, *_timed(case, agent, condition, repeat))
            for agent in section.agents for condition in section.conditions for case in run_suite(ref).cases()]

    def execution_id(agent: str, condition: str, case_id: str) -> str:
        return derived_id(ref.run_id, ids[agent], case_id, condition, repeat)

    def steps() -> list[StepRow]:
        return [StepRow(run_id=ref.run_id, execution_id=execution_id(a, c, case.case_id), step=i, kind="tool_call",
                        name=s.tool, args_json=json.dumps(dict(s.args), sort_keys=True),
                        result_json=json.dumps({"obs_hash": s.obs_hash}), ok=None, reward=None, logprob=None,
                        teacher_logprob=None)
                for a, c, case, trajectory, _ in runs for i, s in enumerate(trajectory.steps)]

    def executions() -> list[ExecutionRow]:
        out = []
        for agent, condition, case, trajectory, wall_s in runs:
            uri = store.blob_uri(store.put_blob(to_json(trajectory).encode()))
            out.append(ExecutionRow(run_id=ref.run_id, execution_id=execution_id(agent, condition, case.case_id),
                                    candidate_id=ids[agent], case_id=case.case_id, split=case.split, seed=repeat,
                                    noise_key=condition, attempt=0, status="ok", error=None, wall_s=wall_s, cpu_s=None,
                                    peak_rss_mb=None, tokens_in=None, tokens_out=None, cost_usd=None,
                                    output_uri=uri, trajectory_uri=uri))
        return out

    once(ref, "steps", "execute", repeat_tag(repeat), steps)
    once(ref, "executions", "execute", repeat_tag(repeat), executions)
    reporter().advance(1, f"repeat {repeat}")


def _timed(case, agent: str, condition: str, repeat: int) -> tuple[Trajectory, float]:
    start = time.perf_counter()
    trajectory = run_trajectory(case.payload, agent, condition, repeat, f"{case.case_id}#{repeat_tag(repeat)}")
    return trajectory, time.perf_counter() - start


def stored_runs(ref: RunRef) -> list[tuple[ExecutionRow, Trajectory]]:
    """Every execution of the run with its stored trajectory, read back (never re-run)."""
    store = store_for(ref.store_uri)
    executions = sorted(store.read_rows("executions", ref.run_id), key=lambda e: e.execution_id)
    return [(e, from_json(store.get_blob(blob_id(e.output_uri)).decode())) for e in executions]


def task_key(execution: ExecutionRow) -> str:
    """One pair's unit: the task under one repeat."""
    return f"{execution.case_id}#{repeat_tag(execution.seed)}"


def grade_stored(ref: RunRef, version: str) -> list[ScoreRow]:
    """score (``version`` 1) or rescore (any other): every configured grader at its
    version under grader-set ``version`` on the stored trajectories, as `scores` rows
    whose ``scorer_version`` is ``version``, in a part of their own (ValueError naming
    the known versions)."""
    known = sorted({v for vs in GRADERS.values() for v in vs})
    if version not in known:
        raise ValueError(f"no trace grader version {version!r}; known: {', '.join(known)}")
    graders = protocol_of(ref).trace.graders
    stage = "score" if version == NATIVE else "rescore"

    def rows() -> list[ScoreRow]:
        out = []
        for execution, trajectory in stored_runs(ref):
            required = required_tools(execution.case_id.split("/", 1)[0])
            for grader in graders:
                applied = version_at(grader, version)
                out.append(ScoreRow(run_id=ref.run_id, execution_id=execution.execution_id,
                                    candidate_id=execution.candidate_id, case_id=execution.case_id,
                                    split=execution.split, scorer=f"trace:{grader}@v{applied}",
                                    scorer_version=version, metric=grader,
                                    value=grade(grader, applied, trajectory, expected_state(trajectory), required),
                                    valid=True, reason=None))
        return out

    return once(ref, "scores", stage, f"v{version}", rows)


@task(name="score", **STAGE_OPTIONS)
def score_trajectories(ref: RunRef) -> None:
    """score: the native graders (version 1) on the stored trajectories."""
    grade_stored(ref, NATIVE)


@task(name="rescore", **STAGE_OPTIONS)
def rescore_trajectories(ref: RunRef, version: str) -> None:
    """rescore: the same stored trajectories under the fixed graders; nothing re-runs."""
    grade_stored(ref, version)


def rescore_run(ref: RunRef, version: str) -> tuple[list[ScoreRow], bool, list[tuple[str, str, float, float]]]:
    """`ratchet rescore RUN_ID --scorer-version V` of a trace run: (the rows under V,
    whether they were already there, the (execution, grader, v1, V) rewards that differ)."""
    existed = store_for(ref.store_uri).has_part("scores", ref.run_id, "score" if version == NATIVE else "rescore",
                                                 f"v{version}")
    rows = grade_stored(ref, version)
    native = {(r.execution_id, r.metric): r.value for r in grade_stored(ref, NATIVE)}
    changed = [(r.execution_id, r.metric, native[(r.execution_id, r.metric)], r.value) for r in rows
               if native[(r.execution_id, r.metric)] != r.value]
    return rows, existed, changed
