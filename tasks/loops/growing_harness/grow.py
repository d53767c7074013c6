"""Stage tasks of the growing_harness loop, first half: the scaffold (the strategy-free
seed harness, validated as the first accepted version), fill_window (the cursor walks
the train stream under the working harness; failures enter the rolling window), repair
(a joint patch of the window's failures from their traces), rerun (the patch on the
window's tasks) and settle (solved tasks leave, unsolved stay, exhausted ones exit).

State lives in the store: after each stage of step s a ``distillates`` row of kind
``loop_state`` (status = the stage: filled, settled, checked) holds the whole
``GrowState`` as JSON, published in one part with that stage's window events (kind
``window_event``: content = task id, status = action). Each stage reads the state the
previous stage published, so a resumed run re-enters at the first missing part.

A candidate runs on a case at most once (its executions are keyed by case): a harness
restored by a rollback reuses its earlier runs instead of re-running them."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Sequence

from prefect import task

from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow, ExecutionRow
from suites.base import Case
from tasks.gate.validation import Checkpoint
from tasks.harness_loops.documents import harness_source, proposal_json, proposal_of
from tasks.harness_loops.episodes import episodes, harness_document, record_steps
from tasks.harness_loops.llm_edit import NoLLMEdit, costed_summary, is_unusable, unusable_row
from tasks.harness_loops.seed import publish_seed
from tasks.loops.growing_harness.grow_llm import llm_patch
from tasks.loops.growing_harness.grow_logic import (
    Event,
    GrowState,
    admit,
    after_repair,
    edit_record,
    joint_repair,
    loop_state,
    state_json,
    state_of,
)
from tasks.proposers.llm import call_cost
from tasks.proposers.rule_evidence import Evidence, Trace, Trial, trace_of
from tasks.proposers.rules import NoRuleEvidence, RuleProposal, RuleProposer
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import blob_id, score_candidates

STAGE = "grow"


def step_key(step: int) -> str:
    return f"s{step:04d}"


# -- state and window events ------------------------------------------------------------


def has_state(ref: RunRef, step: int, stage: str) -> bool:
    return store_for(ref.store_uri).has_part("distillates", ref.run_id, STAGE, f"{stage}-{step_key(step)}")


def read_state(ref: RunRef, step: int, stage: str) -> GrowState:
    rows = store_for(ref.store_uri).read_part("distillates", ref.run_id, STAGE, f"{stage}-{step_key(step)}")
    return state_of(next(r.content for r in rows if r.kind == "loop_state"))


def write_state(ref: RunRef, step: int, stage: str, state: GrowState, events: Sequence[Event],
                extra: Sequence[DistillateRow] = ()) -> None:
    """The state after `stage` of `step` with the window events that led to it, in one part."""
    rows = [DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "window", step, stage, t, a),
                          round=step, kind="window_event", content=t, uri=None, source_execution_ids=[],
                          support=state.attempts.get(t, 0), status=a) for t, a in events]
    rows.append(DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "loop_state", stage),
                              round=step, kind="loop_state", content=state_json(state), uri=None,
                              source_execution_ids=[], support=len(state.current.window), status=stage))
    store_for(ref.store_uri).write_part("distillates", ref.run_id, STAGE, f"{stage}-{step_key(step)}", [*extra, *rows])


# -- evaluation: each (candidate, case) at most once ------------------------------------------


def executions_of(ref: RunRef, candidate_id: str) -> list[ExecutionRow]:
    return [e for e in store_for(ref.store_uri).read_rows("executions", ref.run_id) if e.candidate_id == candidate_id]


def run_missing(ref: RunRef, tag: str, candidate_id: str, cases: Sequence[Case]) -> None:
    """Execute, score and trace the candidate on those `cases` it has not run yet."""
    store = store_for(ref.store_uri)
    if not store.has_part("executions", ref.run_id, "execute", part_key(tag, candidate_id)):
        done = {e.case_id for e in executions_of(ref, candidate_id)}
        todo = [c for c in cases if c.case_id not in done]
        if not todo:
            return
        run_candidates(ref, tag, [candidate_id], todo)
    score_candidates(ref, tag, [candidate_id])
    record_steps(ref, tag, candidate_id)


def successes(ref: RunRef, candidate_id: str, case_ids: Sequence[str]) -> dict[str, float]:
    """case -> success (0/1) of the candidate, for the cases it ran."""
    wanted = set(case_ids)
    return {s.case_id: s.value for s in store_for(ref.store_uri).read_rows("scores", ref.run_id)
            if s.candidate_id == candidate_id and s.metric == "success" and s.case_id in wanted}


def traces(ref: RunRef, candidate_id: str, case_ids: Sequence[str]) -> list[Trace]:
    """The candidate's trajectories on those cases as proposer evidence (re-simulated)."""
    wanted = set(case_ids)
    runs = [e for e in executions_of(ref, candidate_id) if e.case_id in wanted]
    return sorted((trace_of(c.case_id, c.payload, ep) for _, c, ep in episodes(ref, runs)), key=lambda t: t.case_id)


def train_stream(ref: RunRef) -> list[Case]:
    """The train tasks in the order the cursor walks them: a seeded hash order, so the
    templates interleave."""
    seed = run_config(ref).seed
    return sorted(cases_by_split(run_suite(ref), "train"), key=lambda c: derived_id(seed, "stream", c.case_id))


# -- stages ----------------------------------------------------------------------------------


@task(name="scaffold", **STAGE_OPTIONS)
def scaffold(ref: RunRef) -> str:
    """Step 0: publish the strategy-free seed harness and run it on the validation
    (select) tasks; its state, with an empty window at cursor 0, is the first checkpoint."""
    suite, key = run_suite(ref), step_key(0)
    seed = publish_seed(ref, STAGE, key, "the strategy-free scaffold: no rules, no skills")
    select = cases_by_split(suite, "select")
    run_missing(ref, f"val-{key}", seed, select)
    if not has_state(ref, 0, "checked"):
        start = loop_state(seed, (), 0, (), {})
        scores = successes(ref, seed, [c.case_id for c in select])
        write_state(ref, 0, "checked", GrowState(start, Checkpoint(start, scores)), ())
    reporter().advance(1, "scaffold")
    return seed


@task(name="fill_window", **STAGE_OPTIONS)
def fill_window(ref: RunRef, step: int) -> int:
    """The cursor walks the train stream under the working harness until the window is
    full or the stream ends; failures enter the window. Returns the window's size (0:
    nothing left to repair)."""
    if not has_state(ref, step, "filled"):
        state, size = read_state(ref, step - 1, "checked"), run_config(ref).grow.window_size
        stream, current, events = train_stream(ref), state.current, []
        while len(current.window) < size and current.cursor < len(stream):
            batch = stream[current.cursor:current.cursor + size - len(current.window)]
            run_missing(ref, f"stream-{step_key(step)}-{current.cursor}", current.artifact_id, batch)
            got = successes(ref, current.artifact_id, [c.case_id for c in batch])
            current, admitted = admit(current, [(c.case_id, got[c.case_id] >= 1.0) for c in batch], size)
            events += admitted
        write_state(ref, step, "filled", GrowState(current, state.accepted, state.fixes_since_check), events)
    return len(read_state(ref, step, "filled").current.window)


def discarded_trials(ref: RunRef, memories: Sequence[str]) -> list[Trial]:
    """Each edit of every discarded patch the state remembers, with the patch's window traces."""
    store, trials = store_for(ref.store_uri), []
    edits = {r.distillate_id: r for r in store.read_rows("distillates", ref.run_id) if r.kind == "edit"}
    for candidate_id in memories:
        window = json.loads(edits[candidate_id].content)["window_task_ids"]
        replayed = tuple(traces(ref, candidate_id, window))
        trials += [Trial(proposal_of(json.dumps(p)), replayed)
                   for p in json.loads(store.get_blob(blob_id(edits[candidate_id].uri)))]
    return trials


def llm_patch_of(ref: RunRef, step: int, current, failures: Sequence[Trace], known: set[str]) -> list[RuleProposal]:
    """`proposer: llm`: the chat endpoint's patch (tasks/loops/growing_harness/grow_llm.py); raises NoLLMEdit
    (logged) when its answer is not a new valid harness."""
    config = run_config(ref)
    rng = random.Random(seed_for(config.seed, "repair", step))
    try:
        written, call = llm_patch(current.artifact_id, store_for(ref.store_uri).get_blob(current.artifact_id).decode(),
                                  harness_document(ref, current.artifact_id), failures, config.evolve, rng)
        if content_id(harness_source(written.document)) in known:
            raise NoLLMEdit("the llm's harness is an existing candidate", call)
    except NoLLMEdit as reason:
        reporter().advance(0, f"no patch: {reason}")
        raise
    return [dataclasses.replace(written, rationale=costed_summary(ref, call), call=call)]


def propose_patch(ref: RunRef, step: int, state: GrowState) -> list[RuleProposal]:
    """The joint patch of the window's failures: the rule proposer's, or the chat endpoint's."""
    current, config = state.current, run_config(ref)
    failures = traces(ref, current.artifact_id, current.window)
    known = {c.candidate_id for c in store_for(ref.store_uri).read_rows("candidates", ref.run_id)}
    if config.proposer == "llm":
        return llm_patch_of(ref, step, current, failures, known)
    passed = [t for t in traces(ref, current.artifact_id, [c.case_id for c in train_stream(ref)]) if t.success]
    trials = discarded_trials(ref, current.memories)
    rng = random.Random(seed_for(config.seed, "repair", step))

    def propose(uncovered, document, excluded):
        evidence = Evidence(tuple(uncovered), tuple(passed), (*trials, *(Trial(e, ()) for e in excluded)))
        try:
            return RuleProposer().propose(evidence, document, rng)
        except NoRuleEvidence:
            return None

    return joint_repair(harness_document(ref, current.artifact_id), failures, propose, config.grow.repair_batch,
                        lambda document: content_id(harness_source(document)) not in known)


@task(name="repair", **STAGE_OPTIONS)
def repair(ref: RunRef, step: int) -> str | None:
    """Sample: jointly patch the window's failures (the proposer reads their traces);
    returns the patched harness's id, or None when the evidence supports no new patch or
    the llm's answer gave none (recorded as an `llm_answer` candidate; the step goes on)."""
    store, suite, key = store_for(ref.store_uri), run_suite(ref), step_key(step)
    if not store.has_part("candidates", ref.run_id, STAGE, key):
        state = read_state(ref, step, "filled")
        rows, record = [], []
        try:
            edits = propose_patch(ref, step, state)
        except NoLLMEdit as reason:
            edits = []
            rows = [unusable_row(ref, step, state.current.artifact_id, reason)] if reason.asked else []
        if edits:
            blob = store.put_blob(harness_source(edits[-1].document).encode())
            edits_blob = store.put_blob(json.dumps([json.loads(proposal_json(e)) for e in edits]).encode())
            body = edit_record(edits, state.current.window)
            sources = [e.execution_id for e in executions_of(ref, state.current.artifact_id)
                       if e.case_id in body["triggers"]]
            record = [DistillateRow(run_id=ref.run_id, distillate_id=blob, round=step, kind="edit",
                                    content=json.dumps(body, sort_keys=True), uri=store.blob_uri(edits_blob),
                                    source_execution_ids=sorted(sources), support=len(body["triggers"]),
                                    status="proposed")]
            rows = [CandidateRow(run_id=ref.run_id, candidate_id=blob, round=step,
                                 parent_ids=[state.current.artifact_id], operator="+".join(body["operators"]),
                                 proposer="llm" if run_config(ref).proposer == "llm" else RuleProposer.name,
                                 artifact_kind=suite.artifact_kind,
                                 artifact_uri=store.blob_uri(blob), island=-1,
                                 summary=" | ".join(e.rationale for e in edits), **call_cost(edits[-1].call))]
            store.write_part("distillates", ref.run_id, "repair", key, record)
        store.write_part("candidates", ref.run_id, STAGE, key, rows)
    published = [c for c in store.read_part("candidates", ref.run_id, STAGE, key) if not is_unusable(c)]
    return published[0].candidate_id if published else None


@task(name="rerun", **STAGE_OPTIONS)
def rerun(ref: RunRef, step: int, candidate: str) -> None:
    """Execute: the patched harness re-runs the window's tasks (paired: same payloads)."""
    window = set(read_state(ref, step, "filled").current.window)
    run_missing(ref, f"window-{step_key(step)}", candidate, [c for c in train_stream(ref) if c.case_id in window])


@task(name="settle", **STAGE_OPTIONS)
def settle_window(ref: RunRef, step: int, candidate: str | None) -> int:
    """Score and distill: solved tasks leave the window, unsolved ones stay (or exit past
    the retry limit); a patch that solved any becomes the working harness. Returns the
    fixes counted toward the next validation."""
    if not has_state(ref, step, "settled"):
        crash_point("settle", step)
        state, config = read_state(ref, step, "filled"), run_config(ref)
        got = successes(ref, candidate, state.current.window) if candidate else {}
        solved = {t for t, v in got.items() if v >= 1.0}
        settled, events = after_repair(state, candidate, solved, config.grow.retry_limit)
        status = []
        if candidate:
            proposed = store_for(ref.store_uri).read_part("distillates", ref.run_id, "repair", step_key(step))[0]
            kept = settled.current.artifact_id == candidate
            status = [proposed.model_copy(update={"status": "kept" if kept else "discarded", "support": len(solved)})]
        write_state(ref, step, "settled", settled, events, status)
    state = read_state(ref, step, "settled")
    reporter().advance(1, f"step {step}: window {len(state.current.window)}, {state.fixes_since_check} fixes pending")
    return state.fixes_since_check
