"""What `evolve`'s completed rounds add up to, kept incrementally so that a round costs
the same at round 500 as at round 5.

Every stage of round r needs some summary of rounds 0 .. r-1: sample the archive (each
candidate's split means and error kinds) and the latest failure-memory snapshot; distill
the (operator, error kind) supports so far; gate the current champion; register how many
versions the registry holds. Deriving them from whole-run reads makes round r read and
parse everything rounds 0 .. r-1 wrote. Here they are a fold over rounds: `RunState`
after round k is `RunState` after round k-1 plus round k's own parts (its candidates,
scores, executions, failure-memory snapshot, registry rows and the holdout parts of the
candidates it registered), read column-wise from exactly those Parquet parts.

The fold is a pure function of the store, equal to what the whole-run reads give
(`build_archive`, `failure_modes`, `failure_memory`, `current_champion`; the tests
check it round by round). It is cached per process and (store, run) only as a cache: a
fresh process (a resume, another worker) folds the same rounds from the store and gets
the same state. Only rounds whose completion marker is set are cached (their parts are
final); the cache is dropped when the marker of its last round no longer carries the
stamp it was built from (a store recreated at the same place, a resumed run that
re-marks its rounds) and then rebuilt from the store.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from statistics import fmean
from typing import Sequence

import pyarrow as pa

from schemas.arrow import table_to_rows
from schemas.rows import CandidateRow, DistillateRow, RegistryRow
from storage.store import TableStore
from tasks.search.archive import Member, execution_kind, invalid_kind

EXECUTION_COLUMNS = ["candidate_id", "execution_id", "status", "error"]
SCORE_COLUMNS = ["candidate_id", "split", "metric", "value", "valid", "reason"]
FAILED_IDS = 20
"""`failure_modes` cites the first 20 (sorted) failed execution ids of an entry."""


def round_key(round_index: int) -> str:
    """The part key every evolve stage of a round writes under."""
    return f"r{round_index:04d}"


def round_marker(round_index: int) -> str:
    """The marker register sets when a round is complete."""
    return f"round-{round_index:04d}"


def holdout_tag(candidate_id: str) -> str:
    """The stage tag of a registered candidate's holdout executions and scores."""
    return f"holdout-{candidate_id[:20]}"


def execution_key(stage_tag: str, candidate_id: str) -> str:
    """Part key of one candidate's executions under a stage tag (`execute.part_key`)."""
    return f"{stage_tag}-{candidate_id[:20]}"


@dataclass
class Evidence:
    """One candidate's executions and primary-metric scores, as the whole-run reads
    would see them: executions in store order (its holdout part sorts before its round
    part), scores of its round part, then of its holdout part."""

    executions: list[tuple[str, str, str | None]] = field(default_factory=list)
    """(execution_id, status, error)"""
    scores: list[tuple[str, float, bool, str | None]] = field(default_factory=list)
    """(split, value, valid, reason)"""

    def member(self, candidate: CandidateRow) -> Member:
        """The candidate's archive entry (`build_archive`)."""
        train = [v for split, v, _, _ in self.scores if split == "train"]
        select = [v for split, v, _, _ in self.scores if split == "select"]
        errors = [k for _, status, error in self.executions if (k := execution_kind(status, error)) is not None]
        errors += [k for split, _, valid, reason in self.scores
                   if split == "train" and (k := invalid_kind(valid, reason)) is not None]
        return Member(
            candidate_id=candidate.candidate_id, round=candidate.round, island=candidate.island,
            operator=candidate.operator, train_score=fmean(train) if train else None,
            select_score=fmean(select) if select else None, errors=tuple(errors),
        )

    def failure_kinds(self) -> set[str]:
        """The error kinds `failure_modes` counts the candidate under (every split)."""
        kinds = {k for _, status, error in self.executions if (k := execution_kind(status, error)) is not None}
        kinds |= {k for _, _, valid, reason in self.scores if (k := invalid_kind(valid, reason)) is not None}
        return kinds

    def failed_ids(self) -> list[str]:
        return [execution_id for execution_id, status, _ in self.executions if status != "ok"]


def read_evidence(
    store: TableStore, run_id: str, candidates: Sequence[CandidateRow], stage_tag: str, metric: str,
    holdout: Sequence[str] = (),
) -> dict[str, Evidence]:
    """Evidence of `candidates` from their parts under `stage_tag` (plus the holdout
    parts of the ids in `holdout`): only those parts are read, column by column."""
    evidence = {c.candidate_id: Evidence() for c in candidates}
    held = [c for c in holdout if c in evidence]
    executions = store.read_parts_arrow(
        "executions", run_id, "execute",
        [execution_key(holdout_tag(c), c) for c in held] + [execution_key(stage_tag, c) for c in evidence],
        EXECUTION_COLUMNS,
    )
    for candidate_id, execution_id, status, error in _columns(executions, EXECUTION_COLUMNS):
        if candidate_id in evidence:
            evidence[candidate_id].executions.append((execution_id, status, error))
    scores = store.read_parts_arrow("scores", run_id, "score", [stage_tag, *map(holdout_tag, held)], SCORE_COLUMNS)
    for candidate_id, split, row_metric, value, valid, reason in _columns(scores, SCORE_COLUMNS):
        if row_metric == metric and candidate_id in evidence:
            evidence[candidate_id].scores.append((split, value, valid, reason))
    return evidence


def _columns(table: pa.Table, names: Sequence[str]):
    return zip(*(table.column(n).to_pylist() for n in names)) if table.num_rows else iter(())


@dataclass
class RunState:
    """The fold of a run's rounds 0 .. `through` (see the module docstring)."""

    metric: str
    registry_name: str
    champion_alias: str
    through: int = -1
    stamp: bytes | None = None
    members: list[Member] = field(default_factory=list)
    """The archive, ordered by (round, candidate_id) as `build_archive` orders it."""
    by_id: dict[str, Member] = field(default_factory=dict)
    supporters: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    """(operator, error kind) -> candidates made by that operator that hit that kind"""
    first_failed: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """(operator, error kind) -> the smallest failed execution ids of its supporters"""
    memory: list[DistillateRow] = field(default_factory=list)
    """The latest non-empty failure-memory snapshot."""
    registered: int = 0
    """Registry rows under `registry_name`."""
    champion: RegistryRow | None = None

    def clone(self) -> RunState:
        return RunState(
            self.metric, self.registry_name, self.champion_alias, self.through, self.stamp, list(self.members),
            dict(self.by_id), defaultdict(set, {k: set(v) for k, v in self.supporters.items()}),
            {k: list(v) for k, v in self.first_failed.items()}, list(self.memory), self.registered, self.champion,
        )

    def fold(self, store: TableStore, run_id: str, round_index: int) -> None:
        """Add round `round_index`'s parts (the round must follow `through`)."""
        if round_index != self.through + 1:
            raise ValueError(f"round {round_index} does not follow round {self.through}")
        key = round_key(round_index)
        candidates = _rows(store, "candidates", run_id, "sample", key, CandidateRow)
        registry = _rows(store, "registry", run_id, "register", key, RegistryRow)
        evidence = read_evidence(store, run_id, candidates, key, self.metric, [r.candidate_id for r in registry])
        self.add_candidates(candidates, evidence)
        for row in registry:
            if row.name != self.registry_name:
                continue
            self.registered += 1
            if row.alias == self.champion_alias and (self.champion is None or row.version > self.champion.version):
                self.champion = row
        snapshot = [d for d in _rows(store, "distillates", run_id, "distill", key, DistillateRow)
                    if d.kind == "failure_mode"]
        if snapshot:
            self.memory = snapshot
        self.through = round_index

    def add_candidates(self, candidates: Sequence[CandidateRow], evidence: dict[str, Evidence]) -> None:
        for candidate in sorted(candidates, key=lambda c: (c.round, c.candidate_id)):
            found = evidence[candidate.candidate_id]
            member = found.member(candidate)
            self.members.append(member)
            self.by_id[member.candidate_id] = member
            failed = found.failed_ids()
            for kind in found.failure_kinds():
                entry = (candidate.operator, kind)
                self.supporters[entry].add(candidate.candidate_id)
                self.first_failed[entry] = sorted(self.first_failed.get(entry, []) + failed)[:FAILED_IDS]


_CACHE: dict[tuple[str, str], RunState] = {}
_LOCK = threading.Lock()


def _rows(store: TableStore, table: str, run_id: str, stage: str, key: str, model) -> list:
    data = store.read_part_arrow(table, run_id, stage, key)
    return [] if data is None else table_to_rows(model, data)


def run_state(store: TableStore, run_id: str, through: int, metric: str, registry_name: str,
              champion_alias: str) -> RunState:
    """The fold of rounds 0 .. `through` of the run. Callers must not modify it."""
    cache_key = (store.root_uri, run_id)
    with _LOCK:
        state = _CACHE.get(cache_key)
        if (
            state is None
            or (state.metric, state.registry_name, state.champion_alias) != (metric, registry_name, champion_alias)
            or state.through > through
            or (state.through >= 0 and store.read_marker(run_id, round_marker(state.through)) != state.stamp)
        ):
            state = RunState(metric, registry_name, champion_alias)
        while state.through < through:
            stamp = store.read_marker(run_id, round_marker(state.through + 1))
            if stamp is None:
                break
            state.fold(store, run_id, state.through + 1)
            state.stamp = stamp
        _CACHE[cache_key] = state
    if state.through == through:
        return state
    scratch = state.clone()  # rounds not marked complete: fold them, but never cache them
    for round_index in range(scratch.through + 1, through + 1):
        scratch.fold(store, run_id, round_index)
    return scratch


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
