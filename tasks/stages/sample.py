"""sample: propose a round's children from the archive (pure), then publish them.

Parents come from island pools by tournament; a child is a mutation of one parent or,
with probability `crossover_rate`, a crossover of two. The RNG stream is derived from
(run seed, round), so a resumed run proposes exactly the candidates it would have.

An LLM answer that gives no program (an edit that does not apply, a timeout, an HTTP
error) is a recorded candidate of kind ``llm_answer`` in its own part (``r0001-unusable``),
never executed: the round goes on with the other children, and the readers of the round's
part (execute, the archive, distill) see only programs. Every LLM-written candidate
carries its call's cost in the ``tokens_in``/``tokens_out``/``latency_s`` columns, and its
summary ends with the blob of the raw answer: ``| answer=URI``."""

from __future__ import annotations

import random
from typing import Sequence

from prefect import task

from schemas.configs import EvolveConfig
from schemas.ids import content_id, seed_for
from schemas.rows import CandidateRow, DistillateRow
from tasks.gate.stage import completed_rounds
from tasks.proposers import make_proposer
from tasks.proposers.base import FailureMemoryItem, ParentInfo, Proposal, Proposer
from tasks.proposers.llm import ANSWER_KIND, call_cost, cost_note
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import round0_program
from tasks.search.archive import Member, island_pool, tournament

DUPLICATE_RETRIES = 8


def failure_memory(distillates: Sequence[DistillateRow], round_index: int) -> list[FailureMemoryItem]:
    """The failure memory the proposer reads: the latest snapshot before this round."""
    earlier = [d for d in distillates if d.kind == "failure_mode" and d.round < round_index]
    if not earlier:
        return []
    latest = max(d.round for d in earlier)
    items = []
    for d in earlier:
        if d.round == latest and d.status == "active":
            operator, error_kind = d.content.split("\t", 1)
            items.append(FailureMemoryItem(operator=operator, error_kind=error_kind, support=d.support))
    return sorted(items, key=lambda i: (-i.support, i.operator, i.error_kind))


def _parent_info(member: Member, sources: dict[str, str]) -> ParentInfo:
    return ParentInfo(
        candidate_id=member.candidate_id,
        source=sources[member.candidate_id],
        score=member.train_score,
        errors=tuple(reversed(member.errors[-5:])),
    )


class RunHistory(Sequence[ParentInfo]):
    """Every scored program of the archive, in archive order: what a proposer with
    ``reads_history`` (the grammar proposer's TPE on constants) models. A program's
    source is read when an item is first asked for, so a round whose children never
    look at the history reads no source for it."""

    def __init__(self, archive: Sequence[Member], sources: dict[str, str]) -> None:
        self._members = [m for m in archive if m.train_score is not None]
        self._sources = sources

    def __len__(self) -> int:
        return len(self._members)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [_parent_info(m, self._sources) for m in self._members[index]]
        return _parent_info(self._members[index], self._sources)


def propose_children(
    archive: Sequence[Member],
    sources: dict[str, str],
    memory: Sequence[FailureMemoryItem],
    proposer: Proposer,
    config: EvolveConfig,
    round_index: int,
    n_children: int,
    rng: random.Random,
) -> list[tuple[Proposal, int]]:
    """(proposal, island) for each child. A child identical to an archived or sibling
    program is redrawn; after `DUPLICATE_RETRIES` identical draws it is dropped, so the
    candidates table never holds the same program twice."""
    seen = {m.candidate_id for m in archive}
    extra = {"history": RunHistory(archive, sources)} if getattr(proposer, "reads_history", False) else {}
    children: list[tuple[Proposal, int]] = []
    for k in range(n_children):
        island = (round_index * n_children + k) % config.islands
        pool = island_pool(archive, island, round_index, config)
        for _ in range(DUPLICATE_RETRIES):
            parents = [tournament(pool, rng, config.tournament_size)]
            if len(pool) > 1 and rng.random() < config.crossover_rate:
                parents.append(tournament(pool, rng, config.tournament_size))
            proposal = proposer.propose([_parent_info(p, sources) for p in parents], rng, memory, **extra)
            if proposal.unusable is not None or content_id(proposal.source) not in seen:
                seen.add(content_id(proposal.source))
                children.append((proposal, island))
                break
    return children


def _seed_row(ref: RunRef, source_uri: str, candidate_id: str, kind: str, summary: str) -> CandidateRow:
    return CandidateRow(
        run_id=ref.run_id, candidate_id=candidate_id, round=0, parent_ids=[], operator="seed",
        proposer="seed", artifact_kind=kind, artifact_uri=source_uri, island=-1, summary=summary,
    )


@task(name="sample", **STAGE_OPTIONS)
def sample(ref: RunRef, round_index: int, n_children: int) -> list[str]:
    """Publish round `round_index`'s candidates; returns their ids (idempotent)."""
    store = store_for(ref.store_uri)
    key = f"r{round_index:04d}"
    if store.has_part("candidates", ref.run_id, "sample", key):
        return [r.candidate_id for r in store.read_part("candidates", ref.run_id, "sample", key)]
    crash_point("sample", round_index)
    config, suite = run_config(ref), run_suite(ref)
    if round_index == 0:
        program, summary = round0_program(ref, suite.seed_program(), "the suite's seed program")
        blob = store.put_blob(program)
        rows = [_seed_row(ref, store.blob_uri(blob), blob, suite.artifact_kind, summary)]
    else:
        rows = _propose_rows(ref, config, suite.primary_metric, suite.artifact_kind, round_index, n_children)
        unusable = [r for r in rows if r.artifact_kind == ANSWER_KIND]
        if unusable:
            store.write_part("candidates", ref.run_id, "sample", f"{key}-unusable", unusable)
        rows = [r for r in rows if r.artifact_kind != ANSWER_KIND]
    store.write_part("candidates", ref.run_id, "sample", key, rows)
    return [r.candidate_id for r in rows]


class Sources(dict):
    """candidate_id -> program source, read from the store when first asked for: a round
    reads the sources of the parents it draws, not of the whole archive."""

    def __init__(self, store) -> None:
        super().__init__()
        self._store = store

    def __missing__(self, candidate_id: str) -> str:
        source = self[candidate_id] = self._store.get_blob(candidate_id).decode()
        return source


def task_description(suite) -> str:
    """What the LLM's prompt says the task is: the suite's one-line account of itself."""
    doc = (type(suite).__doc__ or "").strip().split("\n")[0].replace("``", "`")
    return f"{doc} The candidate is {suite.candidate}; its score is {suite.primary_metric} (higher is better)."


def _propose_rows(ref, config, metric, kind, round_index, n_children) -> list[CandidateRow]:
    """The round's children from the archive of rounds 0 .. round_index-1, which is
    `build_archive` and `failure_memory` over the whole run, folded round by round."""
    store = store_for(ref.store_uri)
    state = completed_rounds(ref, round_index - 1)
    archive, sources = state.members, Sources(store)
    memory = failure_memory(state.memory, round_index) if config.evolve.failure_memory else []
    suite = run_suite(ref)
    proposer = make_proposer(config.proposer, config.evolve, task_description=task_description(suite),
                             entrypoint=suite.entrypoint)
    rng = random.Random(seed_for(config.seed, "sample", round_index))
    children = propose_children(archive, sources, memory, proposer, config.evolve, round_index, n_children, rng)
    rows = []
    for proposal, island in children:
        blob = store.put_blob(proposal.source.encode())
        answer_uri = None if proposal.answer is None else store.blob_uri(store.put_blob(proposal.answer.encode()))
        rows.append(
            CandidateRow(
                run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=list(proposal.parent_ids),
                operator=proposal.operator, proposer=proposal.proposer,
                artifact_kind=kind if proposal.unusable is None else ANSWER_KIND,
                artifact_uri=store.blob_uri(blob), island=island, summary=proposal.summary + cost_note(proposal, answer_uri),
                **call_cost(proposal),
            )
        )
    return rows
