"""Stage tasks of the modular_rsi loop, first half: plant (the seed harness, round 0),
rollout (sample + execute + score: the round's pool batch under the base harness) and
analyse (distill: outcome groups, contrasted defects, recurring findings routed to
modules).

Tables (``schemas/modular_rsi.py``): ``mrsi_rollouts``, ``mrsi_task_groups``,
``mrsi_findings``. A harness runs as its program (a ``candidates`` row whose id is the
program's sha256, published once per content); every stage publishes parts keyed by
round (``rNNNN``), so a rerun or a resume writes nothing new."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from prefect import task

from schemas.ids import content_id
from schemas.modular_rsi import MRSIFindingRow, MRSIRolloutRow, MRSITaskGroupRow
from schemas.rows import CandidateRow
from suites.base import Case
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import case_index, episode_of, harness_document, run_missing
from tasks.harness_loops.seed import publish_seed
from tasks.loops.modular_rsi.contrast import groups
from tasks.loops.modular_rsi.rounds import analyse, batch_of, by_task, pool_of
from tasks.proposers.rule_evidence import Trace, trace_of
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

STAGE = "mrsi"


def round_key(round_index: int) -> str:
    return f"r{round_index:04d}"


# -- the pool, kept apart from the benchmark --------------------------------------------


def pool_templates(ref: RunRef) -> list[str]:
    config = run_config(ref)
    names = [c.payload["template"] for c in case_index(ref).values()]
    return pool_of(names, config.modular_rsi.pool_templates, config.seed)


def batch(ref: RunRef, round_index: int) -> list[Case]:
    """Round r's batch of pool tasks (train split of the pool templates)."""
    config, pool = run_config(ref), set(pool_templates(ref))
    cases = [c for c in case_index(ref).values() if c.split == "train" and c.payload["template"] in pool]
    return batch_of(cases, round_index, config.modular_rsi.batch, config.seed)


# -- harness documents as candidates ---------------------------------------------------


def publish(ref: RunRef, round_index: int, document: Mapping[str, Any], operator: str, parents: Sequence[str],
            summary: str) -> str:
    """The id of the document's program, its ``candidates`` row published once per content."""
    store, source = store_for(ref.store_uri), harness_source(document)
    candidate = content_id(source)

    def row() -> list[CandidateRow]:
        blob = store.put_blob(source.encode())
        return [CandidateRow(run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=list(parents),
                             operator=operator, proposer="rules", artifact_kind=run_suite(ref).artifact_kind,
                             artifact_uri=store.blob_uri(blob), island=-1, summary=summary[:2000])]

    once(ref, "candidates", STAGE, f"c-{candidate[:24]}", row)
    return candidate


def traces(ref: RunRef, candidate: str, cases: Sequence[Case]) -> dict[str, Trace]:
    """The candidate's trace on each case (a failed execution: an empty failing trace)."""
    wanted = {c.case_id for c in cases}
    runs = {e.case_id: e for e in store_for(ref.store_uri).read_rows("executions", ref.run_id)
            if e.candidate_id == candidate and e.case_id in wanted}
    out = {}
    for case in cases:
        run = runs.get(case.case_id)
        if run is None or run.status != "ok" or not run.output_uri:
            out[case.case_id] = Trace(case.case_id, case.payload["template"], (), False)
        else:
            out[case.case_id] = trace_of(case.case_id, case.payload, episode_of(ref, case.case_id, run.output_uri))
    return out


def runner(ref: RunRef, round_index: int, purpose: str):
    """The pure rounds' runner: publish, run (sandboxed, only missing cases), read traces."""
    def run(document: Mapping[str, Any], cases: Sequence[Case]) -> dict[str, Trace]:
        candidate = publish(ref, round_index, document, purpose, [], f"{purpose} harness of round {round_index}")
        run_missing(ref, f"{round_key(round_index)}-{purpose}", candidate, cases)
        return traces(ref, candidate, cases)
    return run


def base_of(ref: RunRef, round_index: int) -> str:
    """The round's base harness: the seed (round 1) or the last round's integration."""
    store = store_for(ref.store_uri)
    if round_index <= 1:
        return store.read_part("candidates", ref.run_id, STAGE, round_key(0))[0].candidate_id
    return store.read_part("mrsi_integrations", ref.run_id, "integrate", round_key(round_index - 1))[0].candidate_id


# -- stages ----------------------------------------------------------------------------


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Round 0: the seed harness (or the store's champion), every module at its base."""
    return publish_seed(ref, STAGE, round_key(0), "the seed harness: every module at its base version")


def rollout_rows(ref: RunRef, round_index: int) -> list[MRSIRolloutRow]:
    base, cases = base_of(ref, round_index), batch(ref, round_index)
    run_missing(ref, f"{round_key(round_index)}-roll", base, cases)
    got = traces(ref, base, cases)
    runs = {e.case_id: e.execution_id for e in store_for(ref.store_uri).read_rows("executions", ref.run_id)
            if e.candidate_id == base}
    seen: dict[str, int] = {}
    rows = []
    for case in cases:
        task_id, trace = case.payload["template"], got[case.case_id]
        seen[task_id] = seen.get(task_id, -1) + 1
        rows.append(MRSIRolloutRow(
            run_id=ref.run_id, round=round_index, task_id=task_id, case_id=case.case_id, harness_ver=base,
            idx=seen[task_id], success=trace.success, steps=len(trace.steps),
            tokens=sum(s["kind"] == "tool_call" for s in trace.steps), trace_ref=runs.get(case.case_id, "")))
    return rows


@task(name="rollout", **STAGE_OPTIONS)
def rollout(ref: RunRef, round_index: int) -> str:
    """sample + execute + score: the round's batch under the base harness; returns the base."""
    rows = once(ref, "mrsi_rollouts", STAGE, round_key(round_index), lambda: rollout_rows(ref, round_index))
    reporter().advance(1, f"round {round_index}: {sum(r.success for r in rows)}/{len(rows)} batch tasks solved")
    return rows[0].harness_ver


def batch_traces(ref: RunRef, round_index: int) -> tuple[list[Case], dict[str, Trace]]:
    cases = batch(ref, round_index)
    return cases, traces(ref, base_of(ref, round_index), cases)


def analysis_rows(ref: RunRef, round_index: int) -> tuple[list[MRSITaskGroupRow], list[MRSIFindingRow]]:
    config = run_config(ref)
    cases, got = batch_traces(ref, round_index)
    defects, found = analyse(cases, got, int(cases[0].payload["max_steps"]), config.modular_rsi.min_support)
    by = {d.task_id: d for d in defects}
    group_rows = [MRSITaskGroupRow(
        run_id=ref.run_id, round=round_index, task_id=g.task_id, n_succ=g.n_succ, n_fail=g.n_fail, mode=g.mode,
        event=by[g.task_id].event if g.task_id in by else None,
        module=by[g.task_id].module if g.task_id in by else None,
        step=by[g.task_id].step if g.task_id in by else None) for g in groups(by_task(cases, got))]
    finding_rows = [MRSIFindingRow(run_id=ref.run_id, id=f.finding_id, round=round_index, module=f.module,
                                   event=f.event, text=f.text, support_task_ids=list(f.support_task_ids))
                    for f in found]
    return group_rows, finding_rows


@task(name="analyse", **STAGE_OPTIONS)
def analyse_round(ref: RunRef, round_index: int) -> list[str]:
    """distill: outcome groups and recurring findings; returns the findings' ids."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    if not store.has_part("mrsi_findings", ref.run_id, STAGE, key):
        group_rows, finding_rows = analysis_rows(ref, round_index)
        store.write_part("mrsi_task_groups", ref.run_id, STAGE, key, group_rows)
        store.write_part("mrsi_findings", ref.run_id, STAGE, key, finding_rows)
    return [f.id for f in store.read_part("mrsi_findings", ref.run_id, STAGE, key)]


def base_document(ref: RunRef, round_index: int) -> dict:
    return harness_document(ref, base_of(ref, round_index))
