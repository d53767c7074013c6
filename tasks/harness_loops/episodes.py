"""A harness candidate's executions and their trusted episodes: the suite re-simulates
each ok case under the harness the candidate returned, once per (case, output) in a
process (the pair fixes the episode, so later rounds reuse it instead of simulating the
run's history again); `record_steps` writes the trajectories to the `steps` table once
per (tag, candidate); `run_missing` runs a candidate only on the cases it has not run yet."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Sequence

from schemas.rows import ExecutionRow, StepRow
from suites.base import Case
from tasks.harness_loops.documents import literal_document
from tasks.runtime.context import RunRef, run_suite, store_for
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import blob_id, score_candidates


def executions_of(ref: RunRef, tag: str, candidate_id: str) -> list[ExecutionRow]:
    store = store_for(ref.store_uri)
    key = part_key(tag, candidate_id)
    return store.read_part("executions", ref.run_id, "execute", key) if store.has_part(
        "executions", ref.run_id, "execute", key) else []


@lru_cache(maxsize=8)
def case_index(ref: RunRef) -> dict[str, Case]:
    """The run's cases by id."""
    return {c.case_id: c for c in run_suite(ref).cases()}


@lru_cache(maxsize=16384)
def episode_of(ref: RunRef, case_id: str, output_uri: str) -> object:
    """The trusted episode of one case under the harness an output holds (the suite
    re-simulates it); cached, since (case, output) fixes the episode."""
    output = json.loads(store_for(ref.store_uri).get_blob(blob_id(output_uri)))
    return run_suite(ref).episode(case_index(ref)[case_id], output)


def episodes(ref: RunRef, executions: Sequence[ExecutionRow]) -> list[tuple[ExecutionRow, Case, object]]:
    """(execution, case, trusted episode) for every ok execution."""
    cases = case_index(ref)
    return [(e, cases[e.case_id], episode_of(ref, e.case_id, e.output_uri))
            for e in executions if e.status == "ok" and e.output_uri]


def record_steps(ref: RunRef, tag: str, candidate_id: str) -> None:
    """One StepRow per step of every episode under (tag, candidate) (idempotent)."""
    store, key = store_for(ref.store_uri), part_key(tag, candidate_id)
    if store.has_part("steps", ref.run_id, "trace", key):
        return
    rows = [
        StepRow(run_id=ref.run_id, execution_id=execution.execution_id, step=step["step"], kind=step["kind"],
                name=step["name"], args_json=step["args_json"], result_json=step["result_json"], ok=step["ok"],
                reward=step["reward"], logprob=step["logprob"], teacher_logprob=step["teacher_logprob"])
        for execution, _, episode in episodes(ref, executions_of(ref, tag, candidate_id)) for step in episode.steps
    ]
    store.write_part("steps", ref.run_id, "trace", key, rows)


def harness_document(ref: RunRef, candidate_id: str) -> dict:
    """The harness document of a candidate: its program (the blob named by its id, since
    a candidate's id is the sha256 of its source) returns one literal, read without
    running it. One reader for every harness loop."""
    return literal_document(store_for(ref.store_uri).get_blob(candidate_id).decode())


def run_missing(ref: RunRef, tag: str, candidate_id: str, cases: Sequence[Case]) -> None:
    """Execute (sandboxed), score (trusted) and trace the candidate on those ``cases`` it
    has no execution of yet in the run, under ``tag``; a published part is completed
    (scores, steps), never re-run. A candidate thus runs a case at most once per run."""
    store = store_for(ref.store_uri)
    if not store.has_part("executions", ref.run_id, "execute", part_key(tag, candidate_id)):
        done = {e.case_id for e in store.read_rows("executions", ref.run_id) if e.candidate_id == candidate_id}
        cases = [c for c in cases if c.case_id not in done]
        if not cases:
            return
        run_candidates(ref, tag, [candidate_id], cases)
    score_candidates(ref, tag, [candidate_id])
    record_steps(ref, tag, candidate_id)
