"""distill: turn the run's failures into a failure memory the proposer reads.

An entry is an (operator, error kind) pair with its support: how many distinct
candidates made by that operator hit that error kind. Entries with at least
`failure_min_support` are active; the mutation proposer down-weights their operators
and the LLM proposer lists them in its prompt. Each round writes a full snapshot, from
the previous rounds' supports (kept incrementally, `tasks.search.run_index`) plus its own
candidates' executions and scores."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from prefect import task

from schemas.ids import derived_id
from schemas.rows import CandidateRow, DistillateRow, ExecutionRow, ScoreRow
from tasks.gate.stage import completed_rounds
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.search.archive import error_kinds
from tasks.search.run_index import FAILED_IDS, Evidence, RunState, read_evidence


def failure_modes(
    ref: RunRef,
    round_index: int,
    candidates: Sequence[CandidateRow],
    executions: Sequence[ExecutionRow],
    scores: Sequence[ScoreRow],
    min_support: int,
) -> list[DistillateRow]:
    operator_of = {c.candidate_id: c.operator for c in candidates if c.round <= round_index}
    kinds = error_kinds(
        [e for e in executions if e.candidate_id in operator_of],
        [s for s in scores if s.candidate_id in operator_of],
    )
    sources: dict[tuple[str, str], set[str]] = defaultdict(set)
    for candidate_id, candidate_kinds in kinds.items():
        for kind in set(candidate_kinds):
            sources[(operator_of[candidate_id], kind)].add(candidate_id)
    failed: dict[str, list[str]] = defaultdict(list)
    for execution in executions:
        if execution.status != "ok":
            failed[execution.candidate_id].append(execution.execution_id)
    return [
        DistillateRow(
            run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "failure_mode", operator, kind),
            round=round_index, kind="failure_mode", content=f"{operator}\t{kind}", uri=None,
            source_execution_ids=sorted(e for c in ids for e in failed.get(c, []))[:20], support=len(ids),
            status="active" if len(ids) >= min_support else "observed",
        )
        for (operator, kind), ids in sorted(sources.items())
    ]


def failure_modes_since(
    ref: RunRef, round_index: int, state: RunState, candidates: Sequence[CandidateRow],
    evidence: dict[str, Evidence], min_support: int,
) -> list[DistillateRow]:
    """`failure_modes` over the whole run, from the fold of the rounds before
    `round_index` (`state`) plus this round's candidates and their evidence."""
    supporters = {entry: len(ids) for entry, ids in state.supporters.items()}
    failed = {entry: list(ids) for entry, ids in state.first_failed.items()}
    for candidate in candidates:
        if candidate.round > round_index:
            continue
        found = evidence[candidate.candidate_id]
        for kind in found.failure_kinds():
            entry = (candidate.operator, kind)
            supporters[entry] = supporters.get(entry, 0) + 1
            failed[entry] = failed.get(entry, []) + found.failed_ids()
    return [
        DistillateRow(
            run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "failure_mode", operator, kind),
            round=round_index, kind="failure_mode", content=f"{operator}\t{kind}", uri=None,
            source_execution_ids=sorted(failed.get((operator, kind), []))[:FAILED_IDS], support=support,
            status="active" if support >= min_support else "observed",
        )
        for (operator, kind), support in sorted(supporters.items())
    ]


@task(name="distill", **STAGE_OPTIONS)
def distill(ref: RunRef, round_index: int) -> int:
    """Publish this round's failure-memory snapshot; returns the number of active entries."""
    key = f"r{round_index:04d}"
    return sum(r.status == "active" for r in once(ref, "distillates", "distill", key, lambda: round_failure_modes(ref, round_index)))


def round_failure_modes(ref: RunRef, round_index: int) -> list[DistillateRow]:
    """The failure-memory entries that round `round_index`'s evidence opens or changes."""
    store, key = store_for(ref.store_uri), f"r{round_index:04d}"
    state = completed_rounds(ref, round_index - 1)
    candidates = store.read_part("candidates", ref.run_id, "sample", key)
    evidence = read_evidence(store, ref.run_id, candidates, key, run_suite(ref).primary_metric)
    return failure_modes_since(ref, round_index, state, candidates, evidence, run_config(ref).evolve.failure_min_support)
