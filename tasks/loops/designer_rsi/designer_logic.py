"""Pure logic of the designer_rsi loop (Designer-RSI): the gap pool, which library items
need deepening, which edit is written next, and which cases the gate replays. No I/O;
the stage tasks are in ``tasks/loops/designer_rsi/designer.py`` and ``tasks/loops/designer_rsi/designer_gate.py``.

How toolsim stands in for the paper (and where it departs):
- user traffic is the train split served in batches; the frozen judge's "unmet
  requirements" are toolsim's unmet goal conditions; the initial skill library is the
  agent's 8 default plans (``default:<template>``), learned skills and rules are added.
- a failing trajectory that *completed* its plan but left requirements unmet is an
  uncovered subtask: it goes to the gap pool under ``<template>|unmet:<conditions>``.
  A trajectory that *broke* at a step charges the library item that made the step (its
  ``via``: a default plan, a learned skill or a rule) under ``item:<via>``: the item
  co-occurred with a failure. Counts are distinct traffic cases.
- expand: a gap with at least ``gap_threshold`` occurrences (paper: 3) is written up by
  the rule proposer's operators that add a missing procedure (``EXPAND_OPERATORS``:
  gap_skill, extract_skill, follow_up, reread, paginate) instead of an LLM summary.
- deepen: an item charged at least ``revise_threshold`` times (paper: "repeatedly", no
  number) is repaired by local operators (``DEEPEN_OPERATORS``: revise_rule,
  remove_rule, retry_on_error, precondition, switch_tool, paginate), the spec's
  offline repair operators, instead of a reflection model. Only local revisions are
  made; the paper's whole-skill rewrite is not implemented.
- one edit per round: the eligible pool with most occurrences first, then the rule
  proposer's own ranking (support, strength, edit key, seeded tie-break). Edits the
  gate rejected are not proposed again; the pool record stays open (paper: a rejected
  skill is not published, its gap record is kept).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from tasks.gate.paired_replay import ReplayCase
from tasks.harness_loops.metrics import GATED_METRICS
from tasks.proposers.rule_evidence import Evidence, Trace, error_of, failure_point, via_of
from tasks.proposers.rule_operators import Candidate
from tasks.proposers.rules import RuleProposal, RuleProposer, edit_key, pick_edit

EXPAND, DEEPEN = "expand", "deepen"
POOL_KIND = {EXPAND: "gap", DEEPEN: "failing_item"}
"""Distillate kind of each pool's records."""
EXPAND_OPERATORS = frozenset({"gap_skill", "extract_skill", "follow_up", "reread", "paginate"})
DEEPEN_OPERATORS = frozenset({"revise_rule", "remove_rule", "retry_on_error", "precondition", "switch_tool",
                              "paginate"})
MODE_POOLS = {"both": (EXPAND, DEEPEN), "expansion_only": (EXPAND,), "revision_only": (DEEPEN,)}
OPEN, PUBLISHED = "open", "published"


@dataclass(frozen=True)
class Occurrence:
    """One failing traffic case charged to one pool record."""

    pool: str
    signature: str
    case_id: str
    execution_id: str
    detail: str
    """What failed: the unmet conditions, or the step's tool and error code."""


@dataclass(frozen=True)
class PoolRecord:
    """The current state of one gap (expand) or failing item (deepen). A published
    record is closed; later occurrences of its signature open the next generation."""

    pool: str
    signature: str
    generation: int
    case_ids: tuple[str, ...]
    execution_ids: tuple[str, ...]
    status: str = OPEN

    @property
    def count(self) -> int:
        return len(self.case_ids)


def occurrence_of(trace: Trace, execution_id: str) -> Occurrence | None:
    """Where a failing trajectory is charged (see the module docstring); None on success."""
    if trace.success:
        return None
    point = failure_point(trace)
    if point is None:
        unmet = "+".join(sorted(trace.unmet + trace.broken)) or "unknown"
        return Occurrence(EXPAND, f"{trace.template}|unmet:{unmet}", trace.case_id, execution_id, unmet)
    step = trace.steps[point]
    error = error_of(step) or {}
    via = via_of(step) or f"default:{trace.template}"
    return Occurrence(DEEPEN, f"item:{via}", trace.case_id, execution_id,
                      f"{step['name']}:{error.get('code', 'failed')}")


def fold(records: Mapping[str, PoolRecord], occurrences: Iterable[Occurrence]) -> dict[str, PoolRecord]:
    """The records that ``occurrences`` change, by signature: a case already counted in
    its open record adds nothing; a published record is followed by a new generation."""
    changed: dict[str, PoolRecord] = {}
    for occ in sorted(occurrences, key=lambda o: (o.signature, o.case_id)):
        held = changed.get(occ.signature) or records.get(occ.signature)
        if held is None or held.status == PUBLISHED:
            generation = held.generation + 1 if held else 0
            held = PoolRecord(occ.pool, occ.signature, generation, (), ())
        if occ.case_id in held.case_ids:
            continue
        changed[occ.signature] = PoolRecord(held.pool, held.signature, held.generation,
                                            held.case_ids + (occ.case_id,), held.execution_ids + (occ.execution_id,))
    return changed


def eligible(records: Iterable[PoolRecord], mode: str, gap_threshold: int, revise_threshold: int) -> list[PoolRecord]:
    """Open records the mode may act on whose count reached their pool's threshold,
    most occurrences first."""
    needed = {EXPAND: gap_threshold, DEEPEN: revise_threshold}
    ready = [r for r in records if r.status == OPEN and r.pool in MODE_POOLS[mode] and r.count >= needed[r.pool]]
    return sorted(ready, key=lambda r: (-r.count, r.signature))


@dataclass(frozen=True)
class Design:
    """The edit chosen for a round and the pool record it answers."""

    record: PoolRecord
    proposal: RuleProposal


def pool_candidates(record: PoolRecord, evidence: Evidence, document: Mapping[str, Any]) -> list[Candidate]:
    """The proposer's candidates of the record's pool that one of its cases triggered."""
    allowed = EXPAND_OPERATORS if record.pool == EXPAND else DEEPEN_OPERATORS
    cases = set(record.case_ids)
    return [c for c in RuleProposer().candidates(evidence, document)
            if c.operator in allowed and cases.intersection(c.triggers)]


def choose_design(
    records: Sequence[PoolRecord], evidence_for: Mapping[str, Evidence], document: Mapping[str, Any],
    rejected_keys: set[str], rng: random.Random,
) -> Design | None:
    """The first eligible record (in order) with an unrejected edit that parses; within
    a record the proposer's ranking, ties broken by ``rng``."""
    for record in records:
        pool = [c for c in pool_candidates(record, evidence_for[record.signature], document)
                if edit_key(c) not in rejected_keys]
        proposal = pick_edit(document, pool, rng)
        if proposal is not None:
            return Design(record, proposal)
    return None


def related(trace: Trace, record: PoolRecord) -> bool:
    """Whether an old success exercised what the record is about: the same template
    (a gap), or a step made by the item (a failing item)."""
    if record.pool == EXPAND:
        return trace.template == record.signature.split("|", 1)[0]
    item = record.signature.split(":", 1)[1]
    return any(via_of(s) == item for s in trace.steps) or item == f"default:{trace.template}"


def _ranked(ids: Iterable[str], salt: str) -> list[str]:
    return sorted(set(ids), key=lambda i: (hashlib.sha256(f"{salt}\x00{i}".encode()).hexdigest(), i))


def replay_cases(
    record: PoolRecord, successes: Sequence[Trace], n_targets: int, n_successes: int, salt: str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(target cases, old successes) to replay: the record's cases, then old successes
    that exercised what it is about before unrelated ones (each group in salted hash order)."""
    targets = _ranked(record.case_ids, salt)[:n_targets]
    near = _ranked((t.case_id for t in successes if related(t, record)), salt)
    far = _ranked((t.case_id for t in successes if not related(t, record)), salt)
    olds = [c for c in near + far if c not in targets][:n_successes]
    return tuple(targets), tuple(olds)


def gated(metrics: Mapping[str, float]) -> dict[str, float]:
    return {m: metrics[m] for m in GATED_METRICS}


def replay_evidence(
    targets: Sequence[str], olds: Sequence[str], before: Mapping[str, Mapping[str, float]],
    after: Mapping[str, Mapping[str, float]],
) -> list[ReplayCase]:
    """Paired before (champion) / after (candidate) metrics of every replayed case: the
    targets as triggers, the old successes as protected cases."""
    return [ReplayCase(c, "trigger", gated(before[c]), gated(after[c])) for c in targets] + \
        [ReplayCase(c, "protected", gated(before[c]), gated(after[c])) for c in olds]
