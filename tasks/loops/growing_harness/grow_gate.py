"""Stage tasks of the growing_harness loop, second half: the validation gate (after every
``gate_every`` fixes and once before the final test), committing the state it leaves
(accept: the working version becomes the last accepted one; rollback: the last accepted
harness, window, cursor, memories and attempts are restored together), registering the
final harness (holdout measured) and the run's summary (test split).

Every validation is one ``gate_decisions`` row (gate ``growing_harness_validation``,
decision accept / rollback): ``select_score`` is the validation success, ``baseline_score``
the last accepted version's, and ``evidence_json`` holds the working and last accepted
states and, under ``restored``, the state the loop continued from. The committed state is
derived from that row, so what SQL shows is what the loop did. With the gate off the
final harness gets one ``growing_harness_off`` decision saying it was never validated.

Check and commit run in one transaction: a failed commit un-publishes the decision."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.ids import seed_for
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stage import CHAMPION, registry_name
from tasks.gate.validation import GATE, Checkpoint
from tasks.harness_loops.episodes import harness_document
from tasks.harness_loops.tracking import track_candidate
from tasks.loops.growing_harness.grow import has_state, read_state, run_missing, step_key, successes, write_state
from tasks.loops.growing_harness.grow_logic import GrowState, check, check_due
from tasks.runtime.context import (
    RunRef,
    anchored_scorer_version,
    cases_by_split,
    run_config,
    run_suite,
    store_for,
)
from tasks.runtime.failpoints import crash_point
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score

GATE_OFF = "growing_harness_off"
SEED_GATE = "seed"
FINAL = "final"


def _decision_key(where: str) -> str:
    return f"check-{where}"


def decisions_at(ref: RunRef, where: str) -> list[GateDecisionRow]:
    store = store_for(ref.store_uri)
    key = _decision_key(where)
    return store.read_part("gate_decisions", ref.run_id, "validate", key) if store.has_part(
        "gate_decisions", ref.run_id, "validate", key) else []


def validation_scores(ref: RunRef, candidate_id: str) -> dict[str, float]:
    """The candidate's success on every validation (select) task, run if need be."""
    select = cases_by_split(run_suite(ref), "select")
    run_missing(ref, f"val-{candidate_id[:20]}", candidate_id, select)
    return successes(ref, candidate_id, [c.case_id for c in select])


@task(name="admit_scaffold", **STAGE_OPTIONS)
def admit_scaffold(ref: RunRef) -> None:
    """The scaffold's admission as the first last-accepted version (step 0)."""
    if decisions_at(ref, step_key(0)):
        return
    state = read_state(ref, 0, "checked")
    score = state.accepted.score
    evidence = json.dumps({"gate": SEED_GATE, "validation_success": score, "state": state.current.summary()},
                          sort_keys=True)
    outcome = GateOutcome("accept", "the strategy-free scaffold is the first accepted version", [], [], score,
                          None, None, None, None, len(state.accepted.scores), evidence)
    row = decision_row(ref, 0, state.current.artifact_id, SEED_GATE, None, outcome,
                       id_parts=(state.current.artifact_id, SEED_GATE, step_key(0)))
    store_for(ref.store_uri).write_part("gate_decisions", ref.run_id, "validate", _decision_key(step_key(0)), [row])


def _gate(ref: RunRef, where: str, round_index: int, state: GrowState, final: bool) -> None:
    """Publish the validation decision at `where` when one is due (nothing otherwise)."""
    config = run_config(ref)
    remember_decision_part(ref, "validate", _decision_key(where))
    if decisions_at(ref, where) or not check_due(state, config.grow.gate_every, final):
        return
    scores = validation_scores(ref, state.current.artifact_id)
    compared = (state.current.artifact_id, state.accepted.state.artifact_id)
    versions = {s.scorer_version for s in store_for(ref.store_uri).read_rows("scores", ref.run_id)
                if s.case_id in scores and s.candidate_id in compared}
    _, result = check(state, scores, scorer_versions=versions, anchored=anchored_scorer_version(ref),
                      seed=seed_for(config.seed, "gate", where), tolerance=config.grow.tolerance)
    row = decision_row(ref, round_index, state.current.artifact_id, GATE, state.accepted.state.artifact_id,
                       result.outcome, id_parts=(state.current.artifact_id, GATE, where))
    store_for(ref.store_uri).write_part("gate_decisions", ref.run_id, "validate", _decision_key(where), [row])
    track_candidate(ref, row, None)


def committed(state: GrowState, decisions: list[GateDecisionRow]) -> GrowState:
    """The state the loop continues from, derived from the recorded decision: rollback
    restores the last accepted state whole; accept makes the working state the last
    accepted one (with the scores it was validated on); no decision changes nothing."""
    validated = [d for d in decisions if d.gate == GATE]
    if not validated:
        return state
    if validated[0].decision == "rollback":
        return GrowState(state.accepted.state, state.accepted, 0)
    scores = json.loads(validated[0].evidence_json)["scores"]["current"]
    return GrowState(state.current, Checkpoint(state.current, scores), 0)


@task(name="check", **STAGE_OPTIONS)
def check_version(ref: RunRef, step: int) -> str | None:
    """Gate: validate the working harness when `gate_every` fixes have accumulated;
    returns the decision, or None when no check was due."""
    _gate(ref, step_key(step), step, read_state(ref, step, "settled"), final=False)
    decided = decisions_at(ref, step_key(step))
    return decided[0].decision if decided else None


check_version.on_rollback(undo_decision_part)


@task(name="commit", **STAGE_OPTIONS)
def commit_state(ref: RunRef, step: int) -> None:
    """Publish the state the check left: the next step starts from it."""
    if not has_state(ref, step, "checked"):
        crash_point("commit", step)
        state = read_state(ref, step, "settled")
        restored = committed(state, decisions_at(ref, step_key(step)))
        events = [(t, "restore") for t in restored.current.window] if restored.current != state.current else []
        write_state(ref, step, "checked", restored, events)


@task(name="final_check", **STAGE_OPTIONS)
def final_check(ref: RunRef, last_step: int) -> str | None:
    """Gate, once more before the final test (whatever the fix count)."""
    _gate(ref, FINAL, last_step, read_state(ref, last_step, "checked"), final=True)
    decided = decisions_at(ref, FINAL)
    return decided[0].decision if decided else None


final_check.on_rollback(undo_decision_part)


def final_harness(ref: RunRef, last_step: int) -> tuple[str, str, float | None]:
    """(candidate, decision id, validation score) of the harness the loop deploys: the
    last accepted version, or with the gate off the working harness, never validated."""
    state = committed(read_state(ref, last_step, "checked"), decisions_at(ref, FINAL))
    if run_config(ref).grow.gate_every > 0:
        candidate = state.accepted.state.artifact_id
        accepts = [d for d in store_for(ref.store_uri).read_rows("gate_decisions", ref.run_id)
                   if d.candidate_id == candidate and d.decision == "accept"]
        latest = max(accepts, key=lambda d: d.round)
        return candidate, latest.decision_id, state.accepted.score
    candidate = state.current.artifact_id
    if not decisions_at(ref, FINAL):
        evidence = json.dumps({"gate": GATE_OFF, "state": state.current.summary()}, sort_keys=True)
        outcome = GateOutcome("accept", "gate off (grow.gate_every=0): every kept patch is accepted unvalidated",
                              [], [], None, None, None, None, None, 0, evidence)
        row = decision_row(ref, last_step, candidate, GATE_OFF, None, outcome, id_parts=(candidate, GATE_OFF, FINAL))
        store_for(ref.store_uri).write_part("gate_decisions", ref.run_id, "validate", _decision_key(FINAL), [row])
    return candidate, decisions_at(ref, FINAL)[0].decision_id, None


@task(name="register_final", **STAGE_OPTIONS)
def register_final(ref: RunRef, last_step: int) -> str:
    """Register: the grown harness is frozen for deployment as the champion (its holdout
    measured here, never used to decide); returns its id."""
    store = store_for(ref.store_uri)
    if not store.has_part("registry", ref.run_id, "register", FINAL):
        candidate, decision_id, score = final_harness(ref, last_step)
        row = RegistryRow(run_id=ref.run_id, name=registry_name(run_config(ref)), version=1, candidate_id=candidate,
                          stage="stable", alias=CHAMPION, decision_id=decision_id, select_score=score,
                          holdout_score=holdout_score(ref, candidate), event_at=datetime.now(timezone.utc))
        store.write_part("registry", ref.run_id, "register", FINAL, [row])
        decision = next(d for d in store.read_rows("gate_decisions", ref.run_id) if d.decision_id == decision_id)
        track_candidate(ref, decision, row)
    return store.read_part("registry", ref.run_id, "register", FINAL)[0].candidate_id


def test_metrics(ref: RunRef, candidate_id: str) -> dict[str, float]:
    """Mean success and tool calls per task of a harness on the test split."""
    test = cases_by_split(run_suite(ref), "test")
    run_missing(ref, f"test-{candidate_id[:20]}", candidate_id, test)
    ids = {c.case_id for c in test}
    rows = [s for s in store_for(ref.store_uri).read_rows("scores", ref.run_id)
            if s.candidate_id == candidate_id and s.case_id in ids]
    return {m: fmean(s.value for s in rows if s.metric == m) for m in ("success", "tool_calls")}


@task(name="summarize")
def grow_summary(ref: RunRef, seed: str) -> dict[str, object]:
    """Scaffold vs grown harness on the test split; gate and window counts."""
    store = store_for(ref.store_uri)
    final = store.read_part("registry", ref.run_id, "register", FINAL)[0]
    decisions = store.read_rows("gate_decisions", ref.run_id)
    edits = [d for d in store.read_rows("distillates", ref.run_id) if d.kind == "edit"]
    document = harness_document(ref, final.candidate_id)
    seed_test, final_test = test_metrics(ref, seed), test_metrics(ref, final.candidate_id)
    return {
        "run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success", "candidate_id": final.candidate_id,
        "seed_test_success": seed_test["success"], "test_success": final_test["success"],
        "test_tool_calls": final_test["tool_calls"], "holdout_score": final.holdout_score,
        "validations": sum(d.gate == GATE for d in decisions),
        "rollbacks": sum(d.decision == "rollback" for d in decisions),
        "patches_kept": sum(e.status == "kept" for e in edits),
        "patches_discarded": sum(e.status == "discarded" for e in edits),
        "harness_rules": len(document.get("rules", [])), "harness_skills": len(document.get("skills", [])),
    }
