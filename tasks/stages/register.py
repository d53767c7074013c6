"""register: give each accepted candidate a registry version under the champion alias,
measure its held-out score (only registered champions are ever run on holdout cases),
log the round's candidates to the tracker, and mark the round complete."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import fmean
from typing import Sequence

from prefect import task

from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.stage import CHAMPION, GATE, completed_rounds, registry_name
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for, tracker_for
from tasks.runtime.parts import once
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.search.archive import split_means
from tasks.search.run_index import round_marker
from tasks.stages.execute import run_candidates
from tasks.stages.score import score_candidates


def holdout_score(ref: RunRef, candidate_id: str) -> float | None:
    """Run and score one candidate on the holdout cases; mean of the primary metric."""
    suite = run_suite(ref)
    cases = cases_by_split(suite, "holdout")
    if not cases:
        return None
    tag = f"holdout-{candidate_id[:20]}"
    run_candidates(ref, tag, [candidate_id], cases)
    score_candidates(ref, tag, [candidate_id])
    store = store_for(ref.store_uri)
    rows = store.read_part("scores", ref.run_id, "score", tag)
    return fmean(r.value for r in rows if r.metric == suite.primary_metric)


def registry_rows(ref: RunRef, accepted: Sequence[GateDecisionRow], first_version: int, name: str) -> list[RegistryRow]:
    now = datetime.now(timezone.utc)
    return [
        RegistryRow(
            run_id=ref.run_id, name=name, version=first_version + i, candidate_id=d.candidate_id, stage="stable",
            alias=CHAMPION, decision_id=d.decision_id, select_score=d.select_score,
            holdout_score=holdout_score(ref, d.candidate_id), event_at=now,
        )
        for i, d in enumerate(accepted)
    ]


def track_round(ref: RunRef, round_index: int, decisions: Sequence[GateDecisionRow]) -> None:
    """One nested tracker run per candidate: operator, parents, scores, decision, queued
    for the tracker's writer thread (the run's end waits for it)."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    means = split_means(store.read_part("scores", ref.run_id, "score", f"r{round_index:04d}"), suite.primary_metric)
    candidates = {c.candidate_id: c for c in store.read_part("candidates", ref.run_id, "sample", f"r{round_index:04d}")}
    tracker = tracker_for(ref)
    for d in decisions:
        c = candidates[d.candidate_id]
        metrics = {f"{split}_{suite.primary_metric}": means[(c.candidate_id, split)]
                   for split in ("train", "select") if (c.candidate_id, split) in means}
        tracker.log_candidate(
            ref.run_id, c.candidate_id,
            params={"operator": c.operator, "proposer": c.proposer, "parents": ",".join(p[:12] for p in c.parent_ids),
                    "round": str(c.round), "island": str(c.island)},
            metrics=metrics, tags={"gate": GATE, "decision": d.decision},
            artifact=store.get_blob(c.candidate_id), artifact_name="candidate.py",
            background=True,  # overlaps the next round; a resumed run re-logs every round
        )


@task(name="register", **STAGE_OPTIONS)
def register(ref: RunRef, round_index: int) -> int:
    """Register the round's accepted candidates (idempotent); returns how many."""
    crash_point("register", round_index)
    store, config = store_for(ref.store_uri), run_config(ref)
    key = f"r{round_index:04d}"
    decisions = store.read_part("gate_decisions", ref.run_id, "gate", key)
    accepted = [d for d in decisions if d.decision == "accept"]

    def rows() -> list[RegistryRow]:  # versions continue from those the earlier rounds registered
        return registry_rows(ref, accepted, completed_rounds(ref, round_index - 1).registered + 1, registry_name(config))

    once(ref, "registry", "register", key, rows)
    track_round(ref, round_index, decisions)
    store.put_marker(ref.run_id, round_marker(round_index))
    return len(accepted)
