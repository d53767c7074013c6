"""gate: decide on each of a round's candidates against the current champion and
record every decision with its evidence. Runs inside one transaction with register."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

from prefect import task

from schemas.ids import seed_for
from schemas.rows import GateDecisionRow, RegistryRow, ScoreRow
from tasks.gate.best_so_far import best_so_far_gate
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.runtime.context import RunRef, anchored_scorer_version, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name, run_start, start_note
from tasks.search.archive import case_scores
from tasks.search.run_index import RunState, round_key, run_state

GATE = "best_so_far"


def completed_rounds(ref: RunRef, through: int) -> RunState:
    """The run's rounds 0 .. `through` folded (archive, failure memory, registry state),
    kept incrementally per process and rebuilt from the store in a fresh one."""
    return run_state(store_for(ref.store_uri), ref.run_id, through, run_suite(ref).primary_metric,
                     registry_name(run_config(ref)), CHAMPION)


def current_champion(registry: Sequence[RegistryRow], name: str) -> RegistryRow | None:
    """The latest registry event holding the champion alias under `name`."""
    held = [r for r in registry if r.name == name and r.alias == CHAMPION]
    return max(held, key=lambda r: r.version) if held else None


def _versions(scores: Sequence[ScoreRow], candidate_id: str, metric: str) -> set[str]:
    return {s.scorer_version for s in scores if s.candidate_id == candidate_id and s.split == "select" and s.metric == metric}


def champion_row(ref: RunRef, name: str, candidate_id: str, stage: str, decision_id: str,
                 select_score: float | None, holdout_score: float | None = None) -> RegistryRow:
    """``candidate_id`` as the champion of registry ``name`` at ``stage``: the version after
    every stored one of that name, from any run, so the alias history continues across runs."""
    registry = store_for(ref.store_uri).read_rows("registry")
    version = 1 + max((r.version for r in registry if r.name == name), default=0)
    return RegistryRow(run_id=ref.run_id, name=name, version=version, candidate_id=candidate_id, stage=stage,
                       alias=CHAMPION, decision_id=decision_id, select_score=select_score,
                       holdout_score=holdout_score, event_at=datetime.now(timezone.utc))


def decide_round(
    ref: RunRef,
    round_index: int,
    candidate_ids: Sequence[str],
    scores: Sequence[ScoreRow],
    champion_id: str | None,
    metric: str,
    anchored: str,
    min_delta: float,
    seed: int,
) -> list[GateDecisionRow]:
    """Gate the candidates in order; an accepted candidate is the baseline for the next."""
    rows = []
    for candidate_id in candidate_ids:
        baseline = case_scores(scores, metric, champion_id, "select") if champion_id else None
        versions = _versions(scores, candidate_id, metric) | (_versions(scores, champion_id, metric) if champion_id else set())
        outcome = best_so_far_gate(
            case_scores(scores, metric, candidate_id, "select"), baseline, versions, anchored, min_delta,
            seed=seed_for(seed, "gate", candidate_id),
        )
        rows.append(decision_row(ref, round_index, candidate_id, GATE, champion_id, outcome,
                                 id_parts=(candidate_id, GATE), scorer_version=anchored))
        if outcome.decision == "accept":
            champion_id = candidate_id
    return rows


@task(name="gate", **STAGE_OPTIONS)
def gate(ref: RunRef, round_index: int, candidate_ids: list[str]) -> list[str]:
    """Publish the round's decisions; returns the accepted candidate ids in order."""
    key = f"r{round_index:04d}"
    remember_decision_part(ref, "gate", key)
    decisions = once(ref, "gate_decisions", "gate", key, lambda: round_decisions(ref, round_index, candidate_ids))
    return [d.candidate_id for d in decisions if d.decision == "accept"]


def round_decisions(ref: RunRef, round_index: int, candidate_ids: list[str]) -> list[GateDecisionRow]:
    """The round's decisions against the champion it is gated against; round 0 that
    re-scored an earlier run's champion says whose."""
    config, suite = run_config(ref), run_suite(ref)
    champion, scores = _champion_and_scores(ref, round_index)
    rows = decide_round(
        ref, round_index, candidate_ids, scores,
        champion.candidate_id if champion else None, suite.primary_metric, anchored_scorer_version(ref),
        config.evolve.gate_min_delta, config.seed,
    )
    start = run_start(ref) if round_index == 0 else None
    if start is not None:
        rows = [rows[0].model_copy(update={"reason": start_note(start, anchored_scorer_version(ref))})]
    return rows


def _champion_and_scores(ref: RunRef, round_index: int) -> tuple[RegistryRow | None, list[ScoreRow]]:
    """The champion the round is gated against and the score rows the gate reads: the
    round's own part and the champion's round part. Same as the whole run's registry and
    scores would give: no other part holds a select score of these candidates."""
    store, name = store_for(ref.store_uri), registry_name(run_config(ref))
    state = completed_rounds(ref, round_index - 1)
    held = [state.champion] if state.champion is not None else []
    key = round_key(round_index)
    if store.has_own_part("registry", ref.run_id, "register", key):  # registered, then the round rolled back
        held += store.read_part("registry", ref.run_id, "register", key)
    champion = current_champion(held, name)
    scores = store.read_part("scores", ref.run_id, "score", key) if store.has_own_part(
        "scores", ref.run_id, "score", key) else []
    if champion is not None and champion.candidate_id not in {s.candidate_id for s in scores}:
        member = state.by_id.get(champion.candidate_id)
        if member is None:  # not one of the run's archived candidates: read what the store holds
            return champion, store.read_rows("scores", ref.run_id)
        scores = scores + store.read_part("scores", ref.run_id, "score", round_key(member.round))
    return champion, scores


gate.on_rollback(undo_decision_part)  # a failed register un-publishes the round's decisions; a resume re-decides
