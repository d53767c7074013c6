"""The protocol's stages at their Prefect boundaries. Every stage publishes one part
(`tasks.runtime.parts.once`), so a retry or `ratchet resume` recomputes nothing it holds."""

from __future__ import annotations

import hashlib
import json

from prefect import task

from schemas.loops import HarnessOrModelRun
from schemas.rows import CandidateRow, ScoreRow
from suites.base import Case
from suites.toolsim.harness import HarnessError
from tasks.harness_loops.documents import harness_source
from tasks.loops.harness_or_model.arms import Arm, load_arm, payload_for, run_metrics, usage_missing, usage_of
from tasks.loops.harness_or_model.coding import codemidas_record, execute_codemidas
from tasks.loops.harness_or_model.evidence import Run
from tasks.runtime.context import RunRef, anchored_scorer_version, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import blob_id

METRICS = ("success", "ended_self", "hit_limit", "tool_calls")
"""Counted apart, each with its own paired CI: solved ≠ finished ≠ stopped by the limit
(on codemidas ``tool_calls`` counts attempts: each one run of the visible tests)."""
USAGE = ("in_tok", "cached_tok", "out_tok")


def protocol_of(ref: RunRef) -> HarnessOrModelRun:
    return run_config(ref)


def arms_of(ref: RunRef) -> tuple[Arm, Arm]:
    config = protocol_of(ref)
    section = config.harness_or_model
    return load_arm(section.harness_a, config.suite), load_arm(section.harness_b, config.suite)


def arm_program(arm: Arm, suite: str) -> str:
    """The arm as a candidate's artifact: toolsim's harness program, or (codemidas) the
    harness file's attempt limit, usage semantics and document as canonical JSON."""
    if suite == "toolsim":
        return harness_source(arm.document)
    return json.dumps({"max_steps": arm.max_steps, "cache_included": arm.cache_included, **arm.document},
                      sort_keys=True, indent=1)


def arm_ids(arms: tuple[Arm, ...], suite: str = "toolsim") -> dict[str, str]:
    """Arm name -> candidate id (the sha256 of its harness program, as in every harness loop)."""
    return {arm.name: hashlib.sha256(arm_program(arm, suite).encode()).hexdigest() for arm in arms}


@task(name="sample", **STAGE_OPTIONS)
def publish_arms(ref: RunRef) -> dict[str, str]:
    """sample: both harnesses as the run's round-0 candidates, once."""
    store, arms, suite = store_for(ref.store_uri), arms_of(ref), protocol_of(ref).suite

    def rows() -> list[CandidateRow]:
        out = []
        for arm in arms:
            blob = store.put_blob(arm_program(arm, suite).encode())
            out.append(CandidateRow(run_id=ref.run_id, candidate_id=blob, round=0, parent_ids=[], operator="arm",
                                    proposer="fixed", artifact_kind="rules", artifact_uri=store.blob_uri(blob),
                                    island=-1, summary=f"{arm.name}: {arm.description}"))
        return out

    once(ref, "candidates", "sample", "arms", rows)
    return arm_ids(arms, suite)


def seed_tag(seed_index: int) -> str:
    return f"s{seed_index:02d}"


@task(name="execute", **STAGE_OPTIONS)
def execute_arms(ref: RunRef, seed_index: int, ids: dict[str, str]) -> None:
    """execute: both harness programs in the sandbox on every task under this noise seed
    (codemidas: the policy's runs under both arms, every body in the sandbox)."""
    if protocol_of(ref).suite == "codemidas":
        execute_codemidas(ref, seed_tag(seed_index), seed_index, arms_of(ref), ids)
        return
    run_candidates(ref, seed_tag(seed_index), list(ids.values()), run_suite(ref).cases(), seed=seed_index)


@task(name="score", **STAGE_OPTIONS)
def score_arms(ref: RunRef, seed_index: int, ids: dict[str, str]) -> None:
    """score: re-simulate each run with its arm's step limit; record the counts and the
    usage the arm reports (none, and usage_missing=1, for the runs dropped on purpose)."""
    once(ref, "scores", "score", seed_tag(seed_index), lambda: _score_rows(ref, seed_index, ids))
    reporter().advance(1, f"seed {seed_index}")


def _score_rows(ref: RunRef, seed_index: int, ids: dict[str, str]) -> list[ScoreRow]:
    store, suite, config = store_for(ref.store_uri), run_suite(ref), protocol_of(ref)
    cases, version = {c.case_id: c for c in suite.cases()}, suite.scorer_version()
    rows: list[ScoreRow] = []
    for arm in arms_of(ref):
        for execution in store.read_part("executions", ref.run_id, "execute", part_key(seed_tag(seed_index),
                                                                                     ids[arm.name])):
            if config.suite == "codemidas":
                case = Case(execution.case_id, execution.split, {})
                metrics, reason = codemidas_record(store, execution, arm)
            else:
                case = cases[execution.case_id]
                metrics, reason = _run_record(store, suite, case, execution, arm, seed_index)
            if reason is None and usage_missing(config.seed, arm.name, case.case_id, seed_index,
                                                config.harness_or_model.missing_usage_rate):
                metrics = {k: v for k, v in metrics.items() if k not in USAGE} | {"usage_missing": 1.0}
            rows.extend(ScoreRow(run_id=ref.run_id, execution_id=execution.execution_id,
                                 candidate_id=execution.candidate_id, case_id=case.case_id, split=case.split,
                                 scorer=suite.name, scorer_version=version, metric=metric, value=value,
                                 valid=reason is None, reason=reason)
                        for metric, value in sorted(metrics.items()))
    return rows


def _run_record(store, suite, case: Case, execution, arm: Arm, seed_index: int) -> tuple[dict[str, float], str | None]:
    """(metrics, None) of a simulated run, or (the floor, why) when it could not run."""
    floor = {**run_metrics("failed", False, 0), "ended_self": 0.0, "usage_missing": 1.0}
    if execution.status != "ok":
        return floor, execution.status + (f": {execution.error}" if execution.error else "")
    output = json.loads(store.get_blob(blob_id(execution.output_uri)))
    try:
        episode = suite.episode(Case(case.case_id, case.split, payload_for(case.payload, arm, seed_index)), output)
    except HarnessError as exc:
        return floor, str(exc)
    usage = usage_of(episode.steps, arm)
    return {**run_metrics(episode.status, episode.evaluation.success, episode.tool_calls), **usage,
            "usage_missing": 0.0}, None


def recorded_runs(ref: RunRef, ids: dict[str, str], seeds: int) -> list[Run]:
    """Every (arm, task, seed) run from the scores table, refusing rows of any scorer
    version other than the run's anchored one (mixed evidence)."""
    store, anchored = store_for(ref.store_uri), anchored_scorer_version(ref)
    arm_of = {cid: name for name, cid in ids.items()}
    by_execution: dict[str, list[ScoreRow]] = {}
    for seed_index in range(seeds):
        for row in store.read_part("scores", ref.run_id, "score", seed_tag(seed_index)):
            if row.scorer_version != anchored:
                raise ValueError(f"score row of {row.execution_id} has scorer version {row.scorer_version}, "
                                 f"not the run's anchored {anchored}: mixed evidence is refused")
            by_execution.setdefault(row.execution_id, []).append(row)
    seed_of = {e.execution_id: e.seed for s in range(seeds) for cid in ids.values()
               for e in store.read_part("executions", ref.run_id, "execute", part_key(seed_tag(s), cid))}
    runs = []
    for execution_id, rows in sorted(by_execution.items()):
        values = {r.metric: r.value for r in rows}
        usage = None if values.get("usage_missing", 1.0) else {k: values[k] for k in USAGE}
        runs.append(Run(arm_of[rows[0].candidate_id], rows[0].case_id, seed_of[execution_id], values, usage,
                        execution_id))
    return runs
