"""Stage tasks of the designer_rsi loop, first half: plant (the seed library), serve
(the champion answers a batch of user traffic), distill (failures into the gap pool)
and design (one expand or deepen edit of the library).

Every stage is idempotent through deterministic parts: per-round parts ``rNNNN`` of
``candidates``/``distillates`` and one execution part per (tag, candidate). A candidate
runs a case at most once in a run (an execution id is (run, candidate, case, seed)):
``run_missing`` runs only the cases it has no execution of yet, so a case served twice,
or replayed after it was served, reuses the first trajectory.

The gap pool is the ``distillates`` rows of kinds ``gap`` and ``failing_item``: one event
row per record per round it changed (content = signature, generation, counted cases),
the latest event holds. A resumed run rebuilds it from those rows and goes on exactly."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Sequence

from prefect import task

from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow, ExecutionRow
from suites.base import Case
from tasks.harness_loops.documents import harness_source, proposal_json, proposal_of, rule_text
from tasks.harness_loops.episodes import case_index, episode_of, harness_document, record_steps
from tasks.harness_loops.llm_edit import NoLLMEdit, costed_summary, is_unusable, unusable_row
from tasks.harness_loops.seed import publish_seed
from tasks.loops.designer_rsi.designer_llm import llm_design, require_endpoint
from tasks.loops.designer_rsi.designer_logic import (
    OPEN,
    POOL_KIND,
    Design,
    PoolRecord,
    choose_design,
    eligible,
    fold,
    occurrence_of,
    replay_cases,
)
from tasks.proposers.llm import call_cost
from tasks.proposers.rule_evidence import Evidence, Trace, Trial, trace_of
from tasks.proposers.rules import RuleProposer
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import blob_id, score_candidates

DUPLICATE_RETRIES = 8
SKILL_KIND = "skill"
"""Distillate kind of a written edit; statuses proposed -> published | rejected."""


def round_key(round_index: int) -> str:
    return f"r{round_index:04d}"


# -- runs and trajectories -------------------------------------------------------------


def executions_for(ref: RunRef, candidate_id: str) -> list[ExecutionRow]:
    return [e for e in store_for(ref.store_uri).read_rows("executions", ref.run_id) if e.candidate_id == candidate_id]


def trace_for(ref: RunRef, case_id: str, output_uri: str) -> Trace:
    """The trusted episode of one case under the harness an output holds, as evidence."""
    return trace_of(case_id, case_index(ref)[case_id].payload, episode_of(ref, case_id, output_uri))


def traced(ref: RunRef, candidate_id: str, case_ids: set[str] | None = None,
           executions: Sequence[ExecutionRow] | None = None) -> list[tuple[ExecutionRow, Trace]]:
    """(execution, trace) of the candidate's ok train-case runs, by case id."""
    executions = executions_for(ref, candidate_id) if executions is None else executions
    out = [(e, trace_for(ref, e.case_id, e.output_uri)) for e in executions
           if e.split == "train" and e.status == "ok" and e.output_uri and (case_ids is None or e.case_id in case_ids)]
    return sorted(out, key=lambda pair: pair[1].case_id)


def evaluate(ref: RunRef, tag: str, candidate_id: str, cases: Sequence[Case]) -> None:
    """Execute (sandboxed), score (trusted) and record the trajectories of one candidate."""
    if cases:
        run_candidates(ref, tag, [candidate_id], cases)
        score_candidates(ref, tag, [candidate_id])
        record_steps(ref, tag, candidate_id)


def run_missing(ref: RunRef, stage: str, candidate_id: str, cases: Sequence[Case]) -> None:
    """Execute, score and trace the candidate on the cases it has not run yet, under the
    tag (stage, candidate); a published part is completed (scores, steps), never re-run."""
    tag = f"{stage}-{candidate_id[:12]}"
    if store_for(ref.store_uri).has_part("executions", ref.run_id, "execute", part_key(tag, candidate_id)):
        evaluate(ref, tag, candidate_id, cases)
        return
    done = {e.case_id for e in executions_for(ref, candidate_id)}
    evaluate(ref, tag, candidate_id, [c for c in cases if c.case_id not in done])


def cases_named(ref: RunRef, case_ids: Sequence[str]) -> list[Case]:
    index = case_index(ref)
    return [index[c] for c in sorted(set(case_ids))]


# -- the gap pool ------------------------------------------------------------------------


def record_row(ref: RunRef, round_index: int, record: PoolRecord) -> DistillateRow:
    content = json.dumps({"pool": record.pool, "signature": record.signature, "generation": record.generation,
                          "case_ids": list(record.case_ids)}, sort_keys=True)
    return DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, record.signature, record.generation),
                         round=round_index, kind=POOL_KIND[record.pool], content=content, uri=None,
                         source_execution_ids=list(record.execution_ids), support=record.count, status=record.status)


def pool_state(ref: RunRef) -> dict[str, PoolRecord]:
    """The latest record per signature (latest generation, latest event; within a
    round the register's status event follows the distill event)."""
    rows = [r for r in store_for(ref.store_uri).read_rows("distillates", ref.run_id) if r.kind in POOL_KIND.values()]
    state: dict[str, PoolRecord] = {}
    for row in sorted(rows, key=lambda r: (r.round, r.status != OPEN)):
        raw = json.loads(row.content)
        record = PoolRecord(raw["pool"], raw["signature"], raw["generation"], tuple(raw["case_ids"]),
                            tuple(row.source_execution_ids), row.status)
        held = state.get(record.signature)
        if held is None or held.generation <= record.generation:
            state[record.signature] = record
    return state


def traffic(ref: RunRef, round_index: int) -> list[Case]:
    """Round r's user requests: the next ``traffic_batch`` train cases of a seeded
    stream over the train split (it cycles once every train case has arrived)."""
    config = run_config(ref)
    stream = [c for c in case_index(ref).values() if c.split == "train"]
    random.Random(seed_for(config.seed, "traffic")).shuffle(stream)
    size = config.designer.traffic_batch
    return [stream[((round_index - 1) * size + i) % len(stream)] for i in range(min(size, len(stream)))]


def champion_at(ref: RunRef, round_index: int) -> str | None:
    """The champion while round r ran: the latest admission decided before it (the
    registry's current holder would differ when a finished run is re-entered)."""
    admitted = [d for d in store_for(ref.store_uri).read_rows("gate_decisions", ref.run_id)
                if d.decision == "accept" and d.round < round_index]
    return max(admitted, key=lambda d: d.round).candidate_id if admitted else None


# -- stages ------------------------------------------------------------------------------


@task(name="plant_library", **STAGE_OPTIONS)
def plant_library(ref: RunRef) -> str:
    """Round 0: publish the suite's seed harness (the default plans, no learned items)."""
    return publish_seed(ref, "design", round_key(0), "the suite's seed harness: default plans only")


@task(name="serve", **STAGE_OPTIONS)
def serve(ref: RunRef, round_index: int) -> str:
    """execute + score: the champion serves round r's traffic; returns the champion."""
    champion = champion_at(ref, round_index)
    if champion is None:
        raise LookupError(f"run {ref.run_id}: round {round_index} has no champion; plant the seed first")
    run_missing(ref, f"traffic-{round_key(round_index)}", champion, traffic(ref, round_index))
    reporter().advance(1, f"round {round_index}: traffic served")
    return champion


@task(name="distill_gaps", **STAGE_OPTIONS)
def distill_gaps(ref: RunRef, round_index: int, champion: str) -> int:
    """distill: charge the batch's failures to gap / failing-item records; returns the
    number of records that changed."""
    return len(once(ref, "distillates", "distill", round_key(round_index), lambda: gap_rows(ref, round_index, champion)))


def gap_rows(ref: RunRef, round_index: int, champion: str) -> list[DistillateRow]:
    """The gap / failing-item records the round's traffic batch changed."""
    batch = {c.case_id for c in traffic(ref, round_index)}
    found = [occurrence_of(t, e.execution_id) for e, t in traced(ref, champion, batch)]
    changed = fold(pool_state(ref), [o for o in found if o is not None])
    return [record_row(ref, round_index, r) for _, r in sorted(changed.items())]


def skill_rows(ref: RunRef) -> list[DistillateRow]:
    return [r for r in store_for(ref.store_uri).read_rows("distillates", ref.run_id) if r.kind == SKILL_KIND]


def rejected_trials(ref: RunRef) -> list[Trial]:
    """Every edit the gate rejected, with the candidate's replay traces (so a rejected
    retry rule can come back revised)."""
    store = store_for(ref.store_uri)
    trials = [Trial(proposal_of(store.get_blob(blob_id(row.uri))), tuple(t for _, t in traced(ref, row.distillate_id)))
              for row in skill_rows(ref) if row.status == "rejected"]
    return sorted(trials, key=lambda t: t.proposal.key)


def evidence_for(ref: RunRef, round_index: int, champion: str, records: Sequence[PoolRecord],
                 trials: Sequence[Trial]) -> dict[str, Evidence]:
    """Per record: the champion's own trajectories of the record's cases (run now if the
    champion has not served them: "the same assets and upstream state"), its successes,
    and the rejected edits."""
    wanted = sorted({c for r in records for c in r.case_ids})
    run_missing(ref, f"evidence-{round_key(round_index)}", champion, cases_named(ref, wanted))
    traces = [t for _, t in traced(ref, champion)]
    successes = [t for t in traces if t.success]
    return {r.signature: Evidence(tuple(t for t in traces if not t.success and t.case_id in r.case_ids),
                                  tuple(successes), tuple(trials)) for r in records}


def fresh_design(records: Sequence[PoolRecord], evidence: dict[str, Evidence], document: dict,
                 rejected: set[str], known: set[str], rng: random.Random) -> Design | None:
    """The chosen edit, skipping edits that would recreate an existing candidate."""
    excluded = set(rejected)
    for _ in range(DUPLICATE_RETRIES):
        chosen = choose_design(records, evidence, document, excluded, rng)
        if chosen is None or content_id(harness_source(chosen.proposal.document)) not in known:
            return chosen
        excluded.add(chosen.proposal.key)
    return None


def chat_design(ref: RunRef, records: Sequence[PoolRecord], evidence: dict[str, Evidence], champion: str,
                rejected: set[str], known: set[str], rng: random.Random) -> Design:
    """`proposer: llm`: the chat endpoint's edit (tasks/loops/designer_rsi/designer_llm.py), its summary
    carrying the call's cost; raises NoLLMEdit when the answer is no new edit."""
    store, config = store_for(ref.store_uri), run_config(ref)
    written, call = llm_design(records, evidence, champion, store.get_blob(champion).decode(),
                               harness_document(ref, champion), config.evolve, rng)
    if written.proposal.key in rejected:
        raise NoLLMEdit("the llm's edit is one the replay already rejected", call)
    if content_id(harness_source(written.proposal.document)) in known:
        raise NoLLMEdit("the llm's harness is an existing candidate", call)
    return Design(written.record, dataclasses.replace(written.proposal, rationale=costed_summary(ref, call), call=call))


def design_rows(ref: RunRef, round_index: int, champion: str, design: Design,
                successes: Sequence[Trace]) -> tuple[CandidateRow, DistillateRow]:
    store, suite, settings = store_for(ref.store_uri), run_suite(ref), run_config(ref).designer
    proposal = design.proposal
    blob = store.put_blob(harness_source(proposal.document).encode())
    proposal_blob = store.put_blob(proposal_json(proposal).encode())
    candidate = CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[champion], operator=proposal.operator,
        proposer="llm" if proposal.operator.startswith("llm_") else RuleProposer.name,
        artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob), island=-1,
        summary=f"{design.record.pool} {design.record.signature}: {proposal.rationale}", **call_cost(proposal.call),
    )
    targets, olds = replay_cases(design.record, successes, settings.replay_targets, settings.replay_successes, blob)
    content = json.dumps({**json.loads(rule_text(proposal)), "pool": design.record.pool,
                          "replay": {"targets": list(targets), "successes": list(olds)},
                          "signature": design.record.signature,
                          "record_id": derived_id(ref.run_id, design.record.signature, design.record.generation)},
                         sort_keys=True)
    skill = DistillateRow(run_id=ref.run_id, distillate_id=blob, round=round_index, kind=SKILL_KIND, content=content,
                          uri=store.blob_uri(proposal_blob), source_execution_ids=list(design.record.execution_ids),
                          support=design.record.count, status="proposed")
    return candidate, skill


@task(name="design", **STAGE_OPTIONS)
def design(ref: RunRef, round_index: int, champion: str) -> str | None:
    """sample: expand a gap that reached the threshold, or deepen an item that keeps
    failing (the mode decides which pools count), by the rule proposer's operators or,
    under `proposer: llm`, the chat endpoint; returns the candidate id, or None
    when no eligible record has an edit left (an empty part records that; traffic
    goes on). The replay plan (target cases, old successes) is fixed here and stored
    with the skill, so replay and gate read the same cases after any resume."""
    store, config, key = store_for(ref.store_uri), run_config(ref), round_key(round_index)
    if store.has_part("candidates", ref.run_id, "design", key):
        written = [c for c in store.read_part("candidates", ref.run_id, "design", key) if not is_unusable(c)]
        return written[0].candidate_id if written else None
    if config.proposer == "llm":
        require_endpoint(config.evolve)
    settings = config.designer
    records = eligible(pool_state(ref).values(), settings.mode, settings.gap_threshold, settings.revise_threshold)
    trials = rejected_trials(ref)
    known = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}
    rejected = {t.proposal.key for t in trials}
    rng = random.Random(seed_for(config.seed, "design", round_index))
    evidence = evidence_for(ref, round_index, champion, records, trials) if records else {}
    if config.proposer == "llm":
        try:
            chosen = chat_design(ref, records, evidence, champion, rejected, known, rng)
        except NoLLMEdit as reason:  # the answer is recorded, never replayed; traffic goes on
            rows = [unusable_row(ref, round_index, champion, reason)] if reason.asked else []
            store.write_part("distillates", ref.run_id, "design", key, [])
            store.write_part("candidates", ref.run_id, "design", key, rows)
            return None
    else:
        chosen = fresh_design(records, evidence, harness_document(ref, champion), rejected, known, rng)
    successes = next(iter(evidence.values())).successes if evidence else ()
    candidate, skill = design_rows(ref, round_index, champion, chosen, successes) if chosen else (None, None)
    store.write_part("distillates", ref.run_id, "design", key, [skill] if skill else [])
    store.write_part("candidates", ref.run_id, "design", key, [candidate] if candidate else [])
    return candidate.candidate_id if candidate else None

