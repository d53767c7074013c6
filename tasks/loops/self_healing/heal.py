"""Stage tasks of the self_healing loop, first half: plant (the seed harness), detect
(run the champion on the train cases, record its trajectories), notice (write the
failure evidence) and heal (the rule proposer's one edit per round).

Every stage is idempotent through deterministic parts: an execution part per
(tag, candidate), a score part per tag, a steps part per (tag, candidate), and per-round
parts ``heal/rNNNN``, ``notice/rNNNN``. A candidate's executions are unique per case:
its train-case runs live under ``replay-<cid>`` (the cases the gate replayed it on) and
``train-<cid>`` (the rest, run when it is champion), never both for one case."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Sequence

from prefect import task

from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow
from suites.base import Case
from tasks.gate.stage import current_champion, registry_name
from tasks.harness_loops.documents import harness_source, proposal_json, proposal_of, rule_text
from tasks.harness_loops.episodes import episodes, executions_of, harness_document, record_steps
from tasks.harness_loops.llm_edit import NoLLMEdit, costed_summary, is_unusable, unusable_row
from tasks.harness_loops.seed import publish_seed
from tasks.loops.self_healing.heal_llm import llm_rule
from tasks.proposers.llm import call_cost
from tasks.proposers.rule_evidence import Evidence, Trace, Trial, trace_of
from tasks.proposers.rules import NoRuleEvidence, RuleProposal, RuleProposer
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import blob_id, score_candidates

DUPLICATE_RETRIES = 8
SKIPPED = "skipped"
"""What heal returns for a round whose llm answer gave no rule (recorded); the loop goes on."""


def round_key(round_index: int) -> str:
    return f"r{round_index:04d}"


def train_tag(candidate_id: str) -> str:
    return f"train-{candidate_id[:20]}"


def replay_tag(candidate_id: str) -> str:
    return f"replay-{candidate_id[:20]}"


def champion_id(ref: RunRef) -> str | None:
    held = current_champion(store_for(ref.store_uri).read_rows("registry", ref.run_id), registry_name(run_config(ref)))
    return held.candidate_id if held else None


# -- evaluation: execute, score, trajectories ------------------------------------------


def evaluate(ref: RunRef, tag: str, candidate_id: str, cases: Sequence[Case]) -> None:
    """Execute (sandboxed), score (trusted) and record the trajectories of one candidate."""
    if not cases:
        return
    run_candidates(ref, tag, [candidate_id], cases)
    score_candidates(ref, tag, [candidate_id])
    record_steps(ref, tag, candidate_id)


def evaluate_on_train(ref: RunRef, candidate_id: str) -> None:
    """Complete a candidate's train-case runs: those its replay did not already cover."""
    replayed = {e.case_id for e in executions_of(ref, replay_tag(candidate_id), candidate_id)}
    if store_for(ref.store_uri).has_part("executions", ref.run_id, "execute", part_key(train_tag(candidate_id), candidate_id)):
        return
    rest = [c for c in cases_by_split(run_suite(ref), "train") if c.case_id not in replayed]
    evaluate(ref, train_tag(candidate_id), candidate_id, rest)


def train_traces(ref: RunRef, candidate_id: str, tags: Sequence[str] | None = None) -> list[Trace]:
    """The candidate's train-case trajectories as proposer evidence, by case id."""
    tags = tags or (replay_tag(candidate_id), train_tag(candidate_id))
    executions = [e for tag in tags for e in executions_of(ref, tag, candidate_id)]
    traced = [trace_of(case.case_id, case.payload, ep) for e, case, ep in episodes(ref, executions)]
    return sorted(traced, key=lambda t: t.case_id)


# -- stages ----------------------------------------------------------------------------


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Round 0: publish the suite's seed harness as the first candidate."""
    candidate_id = publish_seed(ref, "heal", round_key(0), "the suite's seed harness")
    evaluate_on_train(ref, candidate_id)
    reporter().advance(1, "seed")
    return candidate_id


@task(name="detect", **STAGE_OPTIONS)
def detect(ref: RunRef, round_index: int) -> str:
    """Detect: run the active harness (the champion) on every train case, recording
    trajectories and trusted scores; returns the champion's id."""
    champion = champion_id(ref)
    if champion is None:
        raise LookupError(f"run {ref.run_id}: round {round_index} has no champion; plant the seed first")
    evaluate_on_train(ref, champion)
    return champion


def evidence_rows(ref: RunRef, round_index: int, champion: str, traces: Sequence[Trace]) -> list[DistillateRow]:
    ids = {e.case_id: e.execution_id for t in (replay_tag(champion), train_tag(champion))
           for e in executions_of(ref, t, champion)}
    failures = [t for t in traces if not t.success]
    content = json.dumps({
        "champion": champion,
        "failures": [{"case_id": t.case_id, "template": t.template, "unmet": list(t.unmet), "broken": list(t.broken),
                      "progress": t.progress} for t in failures],
        "successes": [t.case_id for t in traces if t.success],
    }, sort_keys=True)
    return [DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "evidence", round_index),
                          round=round_index, kind="evidence", content=content, uri=None,
                          source_execution_ids=sorted(ids[t.case_id] for t in failures), support=len(failures),
                          status="observed")]


@task(name="notice", **STAGE_OPTIONS)
def notice(ref: RunRef, round_index: int, champion: str) -> int:
    """Notice: write the champion's failure evidence to the workspace (a distillate of
    kind "evidence"); returns the number of failing train cases."""
    rows = once(ref, "distillates", "notice", round_key(round_index),
                lambda: evidence_rows(ref, round_index, champion, train_traces(ref, champion)))
    return rows[0].support


def rejected_trials(ref: RunRef) -> list[Trial]:
    """Every proposal the gate retired, with the traces of its replay. A rule's
    distillate id is the id of the candidate harness it produced."""
    store = store_for(ref.store_uri)
    trials = []
    for row in store.read_rows("distillates", ref.run_id):
        if row.kind == "rule" and row.status == "retired":
            replayed = train_traces(ref, row.distillate_id, (replay_tag(row.distillate_id),))
            trials.append(Trial(proposal_of(store.get_blob(blob_id(row.uri))), tuple(replayed)))
    return sorted(trials, key=lambda t: t.proposal.key)


def propose_new(
    traces: Sequence[Trace], trials: Sequence[Trial], document: dict, known: set[str], rng: random.Random,
) -> RuleProposal | None:
    """The proposer's edit, skipping edits that would recreate an existing candidate;
    None when the evidence supports no new edit (NoRuleEvidence)."""
    rejected = list(trials)
    for _ in range(DUPLICATE_RETRIES):
        try:
            proposal = RuleProposer().propose(Evidence.of(traces, rejected), document, rng)
        except NoRuleEvidence:
            return None
        if content_id(harness_source(proposal.document)) not in known:
            return proposal
        rejected.append(Trial(proposal, ()))
    return None


def llm_proposal(ref: RunRef, champion: str, traces: Sequence[Trace], document: dict, known: set[str],
                 rng: random.Random) -> RuleProposal:
    """`proposer: llm`: the chat endpoint's rule (tasks/loops/self_healing/heal_llm.py);
    raises NoLLMEdit (logged) saying why its answer is not one new rule."""
    source = store_for(ref.store_uri).get_blob(champion).decode()
    try:
        written, call = llm_rule(champion, source, document, traces, run_config(ref).evolve, rng)
        if content_id(harness_source(written.document)) in known:
            raise NoLLMEdit("the llm's harness is an existing candidate", call)
    except NoLLMEdit as reason:
        reporter().advance(0, f"no rule: {reason}")
        raise
    return dataclasses.replace(written, rationale=costed_summary(ref, call), call=call)


def heal_rows(ref: RunRef, round_index: int, champion: str, proposal: RuleProposal,
              proposer: str) -> tuple[CandidateRow, DistillateRow]:
    """Publish the edited harness's program and proposal blobs; the candidate row and
    the rule's distillate row (status "proposed")."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    blob = store.put_blob(harness_source(proposal.document).encode())
    proposal_blob = store.put_blob(proposal_json(proposal).encode())
    candidate = CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[champion], operator=proposal.operator,
        proposer=proposer, artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob), island=-1,
        summary=proposal.rationale, **call_cost(proposal.call),
    )
    sources = {e.case_id: e.execution_id for t in (replay_tag(champion), train_tag(champion))
               for e in executions_of(ref, t, champion)}
    distillate = DistillateRow(
        run_id=ref.run_id, distillate_id=blob, round=round_index, kind="rule", content=rule_text(proposal),
        uri=store.blob_uri(proposal_blob), source_execution_ids=sorted(sources[c] for c in proposal.triggers if c in sources),
        support=proposal.support, status="proposed",
    )
    return candidate, distillate


@task(name="heal", **STAGE_OPTIONS)
def heal(ref: RunRef, round_index: int, champion: str) -> str | None:
    """Heal: the rule proposer's one edit of the champion's harness, from the noticed
    evidence and the rejected proposals (`proposer: llm`: the chat endpoint's); returns the candidate id, or None when the
    evidence supports no new edit (nothing is recorded; the loop stops), or SKIPPED when the llm's answer gave no
    rule (recorded as an `llm_answer` candidate; the loop goes on to the next round)."""
    store, config = store_for(ref.store_uri), run_config(ref)
    key = round_key(round_index)
    if store.has_part("candidates", ref.run_id, "heal", key):
        written = store.read_part("candidates", ref.run_id, "heal", key)[0]
        return SKIPPED if is_unusable(written) else written.candidate_id
    known = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}
    rng = random.Random(seed_for(config.seed, "heal", round_index))
    traces, document = train_traces(ref, champion), harness_document(ref, champion)
    if config.proposer == "llm":
        try:
            proposal = llm_proposal(ref, champion, traces, document, known, rng)
        except NoLLMEdit as reason:
            if not reason.asked:
                return None
            store.write_part("candidates", ref.run_id, "heal", key, [unusable_row(ref, round_index, champion, reason)])
            return SKIPPED
    else:
        proposal = propose_new(traces, rejected_trials(ref), document, known, rng)
    if proposal is None:
        return None
    proposer = "llm" if config.proposer == "llm" else RuleProposer.name
    candidate, distillate = heal_rows(ref, round_index, champion, proposal, proposer)
    store.write_part("distillates", ref.run_id, "heal", key, [distillate])
    store.write_part("candidates", ref.run_id, "heal", key, [candidate])
    return candidate.candidate_id
