"""The self_healing loop's library guard (Self-Healing Harness's "rule-base guard"):
every ``heal.guard_interval`` admissions, re-test the whole active rule set and retire
the members whose removal does not hurt.

One guard round is a sequence of steps. Step s ablates every member of the current
champion harness (a rule by id, a skill by name): the champion without that member is a
candidate (operator "ablate", published unless it already is one, e.g. the champion
before that rule was admitted), run on the protected + select cases. The pure gate
``tasks.gate.library_guard.guard_retire`` weighs per-case success and names at most one
member; a retirement is a ``library_guard`` decision (reject), the ablated harness is
registered as the new champion (its holdout measured) and the rule distillates that
target the member move to "retired"; the next step re-tests the smaller set. A step that
retires nothing (accept) ends the round.

Departures from the paper: its interval is not given (ours: a config knob, default 3
admissions); the guard weighs ``success`` only, with tolerance 0, on the suite's
protected + select cases (not a replay of recent traffic); it retires greedily one
member per step. Idempotent: each step publishes parts keyed ``rNNNN-sKK`` (decision,
then candidates, registry, distillates) and reads them back on resume; a candidate's
guard-case runs are one part per candidate, shared by every guard round that tests it.
"""

from __future__ import annotations

import json
from dataclasses import replace

from prefect import task

from schemas.ids import seed_for
from schemas.rows import CandidateRow, DistillateRow, GateDecisionRow, RegistryRow
from tasks.gate.library_guard import guard_due, guard_retire
from tasks.gate.rows import decision_row
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import executions_of, harness_document
from tasks.harness_loops.metrics import PRIMARY, case_metrics
from tasks.loops.self_healing.heal import champion_id, evaluate, replay_tag, round_key
from tasks.loops.self_healing.heal_gate import registry_row
from tasks.loops.self_healing.heal_logic import GUARD, ablations, admissions_since_guard, member_target
from tasks.runtime.context import (
    RunRef,
    anchored_scorer_version,
    cases_by_split,
    run_config,
    run_suite,
    store_for,
    tracker_for,
)
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

GUARD_SPLITS = ("protected", "select")
TOLERANCE = 0.0
STATUS_ORDER = {"proposed": 0, "active": 1, "retired": 2}
"""A rule's status events in the order they happen; the latest holds."""


def guard_tag(candidate_id: str) -> str:
    return f"guard-{candidate_id[:20]}"


def step_key(round_index: int, step: int) -> str:
    return f"{round_key(round_index)}-s{step:02d}"


@task(name="guard_due", **STAGE_OPTIONS)
def guard_is_due(ref: RunRef, round_index: int) -> bool:
    """Whether the guard re-tests the active set after this round (off: never)."""
    heal = run_config(ref).heal
    if not heal.guard:
        return False
    decisions = store_for(ref.store_uri).read_rows("gate_decisions", ref.run_id)
    return guard_due(admissions_since_guard(decisions, round_index), heal.guard_interval)


def ablation_candidates(ref: RunRef, round_index: int, key: str, champion: str) -> dict[str, str]:
    """Member -> candidate id of the champion harness without it; the ones that are
    not yet candidates are published (operator "ablate")."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    known = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}
    ids: dict[str, str] = {}
    rows: list[CandidateRow] = []
    for member, document in ablations(harness_document(ref, champion)).items():
        blob = ids[member] = store.put_blob(harness_source(document).encode())
        if blob not in known and blob not in {r.candidate_id for r in rows}:
            rows.append(CandidateRow(
                run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[champion], operator="ablate",
                proposer=GUARD, artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob), island=-1,
                summary=f"the champion harness without {member}"))
    once(ref, "candidates", "guard", key, lambda: rows)
    return ids


def guard_case_success(ref: RunRef, candidate_id: str) -> dict[str, float]:
    """Per-case success on the protected + select cases, running the candidate on those
    its replay did not already cover (a candidate runs each case once)."""
    replayed = {e.case_id for e in executions_of(ref, replay_tag(candidate_id), candidate_id)}
    rest = [c for c in cases_by_split(run_suite(ref), *GUARD_SPLITS) if c.case_id not in replayed]
    evaluate(ref, guard_tag(candidate_id), candidate_id, rest)
    scores = store_for(ref.store_uri).read_rows("scores", ref.run_id)
    return {case: m[PRIMARY] for case, m in case_metrics(scores, candidate_id, GUARD_SPLITS).items()}


def guard_decision(ref: RunRef, round_index: int, step: int) -> GateDecisionRow:
    """Ablate every member of the current champion and ask the guard gate which (if
    any) to retire. Decision row: candidate = the harness kept from now on (the ablated
    one on a retirement), baseline = the champion re-tested."""
    key, champion = step_key(round_index, step), champion_id(ref)
    without_ids = ablation_candidates(ref, round_index, key, champion)
    full = guard_case_success(ref, champion)
    without = {member: guard_case_success(ref, cid) for member, cid in without_ids.items()}
    scores = store_for(ref.store_uri).read_rows("scores", ref.run_id)
    weighed = {champion, *without_ids.values()}
    versions = {s.scorer_version for s in scores if s.candidate_id in weighed and s.split in GUARD_SPLITS}
    result = guard_retire(full, without, scorer_versions=versions, anchored=anchored_scorer_version(ref),
                          tolerance=TOLERANCE, seed=seed_for(run_config(ref).seed, "guard", champion))
    kept = without_ids[result.retire] if result.retire else champion
    evidence = {**json.loads(result.outcome.evidence_json), "step": step, "champion": champion,
                "ablated": dict(sorted(without_ids.items()))}
    outcome = replace(result.outcome, evidence_json=json.dumps(evidence, sort_keys=True))
    return decision_row(ref, round_index, kept, GUARD, champion, outcome, id_parts=(champion, GUARD, round_index, step))


def retired_rules(ref: RunRef, round_index: int, member: str) -> list[DistillateRow]:
    """The member's rule distillates (every active proposal that targets it), retired."""
    latest: dict[str, DistillateRow] = {}
    for row in store_for(ref.store_uri).read_rows("distillates", ref.run_id):
        held = latest.get(row.distillate_id)
        if row.kind == "rule" and (held is None or STATUS_ORDER[row.status] > STATUS_ORDER[held.status]):
            latest[row.distillate_id] = row
    return [row.model_copy(update={"status": "retired", "round": round_index})
            for row in latest.values()
            if row.status == "active" and json.loads(row.content)["target"] == member_target(member)]


def track_retirement(ref: RunRef, decision: GateDecisionRow, registered: RegistryRow, member: str) -> None:
    """Log the new champion (the set without `member`) to the tracker."""
    store = store_for(ref.store_uri)
    candidate = next(c for c in store.read_rows("candidates", ref.run_id) if c.candidate_id == decision.candidate_id)
    metrics = {"guard_score": decision.select_score, "guard_removal_delta": decision.delta,
               "holdout_success": registered.holdout_score}
    tracker_for(ref).log_candidate(
        ref.run_id, candidate.candidate_id,
        params={"operator": candidate.operator, "proposer": candidate.proposer, "round": str(candidate.round),
                "parents": ",".join(p[:12] for p in candidate.parent_ids)},
        metrics={k: v for k, v in metrics.items() if v is not None},
        tags={"guard_round": str(decision.round), "guard_retired": member},
        artifact=store.get_blob(candidate.candidate_id), artifact_name="harness.py",
    )


def guard_step(ref: RunRef, round_index: int, step: int) -> str | None:
    """One guard step (idempotent): decide, then on a retirement register the smaller
    set and retire the member's rules. Returns the retired member, or None."""
    key = step_key(round_index, step)
    decision = once(ref, "gate_decisions", "guard", key, lambda: [guard_decision(ref, round_index, step)])[0]
    member = json.loads(decision.evidence_json).get("retired")
    if decision.decision != "reject" or member is None:
        return None
    registered = once(ref, "registry", "guard", key, lambda: [registry_row(ref, decision)])[0]
    once(ref, "distillates", "guard", key, lambda: retired_rules(ref, round_index, member))
    track_retirement(ref, decision, registered, member)
    return member


@task(name="library_guard", **STAGE_OPTIONS)
def library_guard(ref: RunRef, round_index: int) -> list[str]:
    """Re-test the active set, retiring one member per step until no removal is free;
    returns the retired members in order."""
    retired: list[str] = []
    step = 0
    while (member := guard_step(ref, round_index, step)) is not None:
        retired.append(member)
        step += 1
    reporter().advance(0, f"round {round_index}: library guard retired {len(retired)}")
    return retired
