"""The program archive of `evolve`: every evaluated candidate with its per-split mean
score, grouped into islands. Pure functions over rows; the archive is derived from the
store, never kept as state of its own, so a resumed run rebuilds it exactly. The stages
derive it incrementally (`tasks.search.run_index`): the same function of the store,
folded one completed round at a time."""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from statistics import fmean
from typing import Iterable, Sequence

from schemas.configs import EvolveConfig
from schemas.rows import CandidateRow, ExecutionRow, ScoreRow


@dataclass(frozen=True)
class Member:
    """One archived candidate. Scores are means of the primary metric over the split's
    cases (floors included for failed cases); None when not evaluated on that split."""

    candidate_id: str
    round: int
    island: int
    operator: str
    train_score: float | None
    select_score: float | None
    errors: tuple[str, ...] = field(default=())

    def fitness(self) -> float:
        return self.train_score if self.train_score is not None else float("-inf")


def split_means(scores: Iterable[ScoreRow], metric: str) -> dict[tuple[str, str], float]:
    """(candidate_id, split) -> mean of `metric` over that split's cases."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for row in scores:
        if row.metric == metric:
            values[(row.candidate_id, row.split)].append(row.value)
    return {key: fmean(v) for key, v in values.items()}


def case_scores(scores: Iterable[ScoreRow], metric: str, candidate_id: str, split: str) -> dict[str, float]:
    """case_id -> value of `metric` for one candidate on one split."""
    return {
        r.case_id: r.value
        for r in scores
        if r.metric == metric and r.candidate_id == candidate_id and r.split == split
    }


def error_kinds(executions: Iterable[ExecutionRow], invalid: Iterable[ScoreRow]) -> dict[str, list[str]]:
    """candidate_id -> error kinds of its failed executions and invalid outputs.

    The kind of a crash is its exception class ("ZeroDivisionError"), of a limit its
    status ("timeout", "memory"), of an invalid output the scorer's reason up to the
    first colon ("overlap"), so that recurring failures group together."""
    kinds: dict[str, list[str]] = defaultdict(list)
    for row in executions:
        kind = execution_kind(row.status, row.error)
        if kind is not None:
            kinds[row.candidate_id].append(kind)
    for row in invalid:
        kind = invalid_kind(row.valid, row.reason)
        if kind is not None:
            kinds[row.candidate_id].append(kind)
    return kinds


def execution_kind(status: str, error: str | None) -> str | None:
    """The error kind of one execution (None when it succeeded); see `error_kinds`."""
    if status == "ok":
        return None
    if status == "error" and error:
        return error.split(":", 1)[0].strip() or "error"
    return status


def invalid_kind(valid: bool, reason: str | None) -> str | None:
    """The error kind of one score row (None unless an invalid output with a reason)."""
    if not valid and reason:
        return "invalid " + reason.split(":", 1)[0].strip()[:40]
    return None


def build_archive(
    candidates: Sequence[CandidateRow],
    scores: Sequence[ScoreRow],
    executions: Sequence[ExecutionRow],
    metric: str,
) -> list[Member]:
    means = split_means(scores, metric)
    failed_scores = [s for s in scores if s.metric == metric and s.split == "train"]
    kinds = error_kinds(executions, failed_scores)
    return [
        Member(
            candidate_id=c.candidate_id,
            round=c.round,
            island=c.island,
            operator=c.operator,
            train_score=means.get((c.candidate_id, "train")),
            select_score=means.get((c.candidate_id, "select")),
            errors=tuple(kinds.get(c.candidate_id, ())),
        )
        for c in sorted(candidates, key=lambda c: (c.round, c.candidate_id))
    ]


def island_pool(archive: Sequence[Member], island: int, round_index: int, config: EvolveConfig) -> list[Member]:
    """Members a parent for `island` may come from. The seed (island -1) belongs to every
    island; every `migration_interval` rounds the neighbouring island's best migrates in."""
    own = [m for m in archive if m.island in (island, -1)]
    if config.islands > 1 and round_index % config.migration_interval == 0:
        neighbour = [m for m in archive if m.island == (island - 1) % config.islands]
        if neighbour:
            own.append(max(neighbour, key=lambda m: (m.fitness(), m.candidate_id)))
    return own


def tournament(pool: Sequence[Member], rng: random.Random, size: int) -> Member:
    """Best of `size` members drawn with replacement (ties broken by id, for determinism)."""
    if not pool:
        raise ValueError("cannot select a parent from an empty pool")
    drawn = [pool[rng.randrange(len(pool))] for _ in range(size)]
    return max(drawn, key=lambda m: (m.fitness(), m.candidate_id))
