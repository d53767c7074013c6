"""evoalloc's distill, gate and register stages: experience and a new policy from the
cases, the shadow acceptance rule on later candidates, the accepted policy and the best
program registered, and the run's summary (`evoalloc_run`)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from prefect import task

from schemas.ids import derived_id
from schemas.rows import CandidateRow, DistillateRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.loops.evoalloc.logic import revise, shadow_accept, split_cases
from tasks.loops.evoalloc.stages import EXPERIENCE_KIND, GATE, RUN_KIND, allocations, as_case, levels, policy_of, \
    section
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score


def policies_before(ref: RunRef, r: int) -> list[CandidateRow]:
    """The allocator policies the run proposed before round `r` (the initial one included)."""
    rows = store_for(ref.store_uri).read_rows("candidates", ref.run_id)
    return [c for c in rows if c.artifact_kind == "allocator" and c.round < r]


@task(name="distill", **STAGE_OPTIONS)
def distill(ref: RunRef, r: int, active: str) -> str:
    """After `revise_every` full results since the last revision: supporting and refuting
    cases (counterfactuals included) become an `evoalloc_experience` note and a new policy
    candidate; returns its id ("" when not triggered, the arm is `fixed`, or `one_shot`
    already revised)."""
    s, has_partial = section(ref), bool(levels(ref)[1])
    since = max(c.round for c in policies_before(ref, r))
    done = store_for(ref.store_uri).has_part("candidates", ref.run_id, "distill", f"r{r:04d}")
    if s.arm == "fixed" or (s.arm == "one_shot" and since > 0 and not done):
        return ""
    prior = allocations(ref, r)
    recent = sum(1 for a in prior if a["full_score"] is not None and a["round"] > since)
    if recent < s.revise_every and not done:
        return ""
    cases = [as_case(a) for a in prior if a["order"] > 0]
    old = policy_of(ref, active)
    new, note = revise(old, cases, has_partial)
    supporting, refuting = split_cases(old, cases, has_partial)
    store = store_for(ref.store_uri)
    known = {c.candidate_id for c in policies_before(ref, r)}
    if not done and store.put_blob(new.code().encode()) in known:
        return ""  # the refit gives a policy the run already tried

    def rows() -> list[CandidateRow]:
        pid = store.put_blob(new.code().encode())
        return [CandidateRow(run_id=ref.run_id, candidate_id=pid, round=r, parent_ids=[active], operator="refit",
                             proposer="evoalloc", artifact_kind="allocator", artifact_uri=store.blob_uri(pid),
                             island=-1, summary=new.code())]

    pid = once(ref, "candidates", "distill", f"r{r:04d}", rows)[0].candidate_id
    body = {"version": pid, "parent_version": active, "supporting": supporting, "refuting": refuting, "note": note}
    once(ref, "distillates", "distill", f"r{r:04d}", lambda: [DistillateRow(
        run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "experience", r), round=r, kind=EXPERIENCE_KIND,
        content=json.dumps(body, sort_keys=True), uri=None, source_execution_ids=[],
        support=len(supporting) + len(refuting), status="active")])
    return pid


@task(name="gate", **STAGE_OPTIONS)
def gate(ref: RunRef, r: int, active: str, shadow: str) -> tuple[str, str]:
    """gate: once the shadow policy has shared `shadow_window` candidates with the active
    one, the shadow acceptance rule decides (the `one_shot` arm adopts its one revision
    without a trial). Returns (active, shadow): ("winner", "") when decided, else unchanged."""
    s, has_partial = section(ref), bool(levels(ref)[1])
    trial = [as_case(a) for a in allocations(ref, r) if a["shadow_version"] == shadow]
    key = f"r{r:04d}"
    decided = store_for(ref.store_uri).has_part("gate_decisions", ref.run_id, "gate", key)
    if s.arm != "one_shot" and len(trial) < s.shadow_window and not decided:
        return active, shadow
    old, new = policy_of(ref, active), policy_of(ref, shadow)
    accept, stats = (True, {}) if s.arm == "one_shot" else shadow_accept(old, new, trial, has_partial)
    reason = ("one-shot: adopted without a shadow trial" if s.arm == "one_shot" else
              f"missed new bests {stats['missed_best_new']} vs {stats['missed_best_old']}, Full + Partial "
              f"evaluations {stats['evals_new']} vs {stats['evals_old']} on {len(trial)} shadow candidates")
    def rows():
        outcome = GateOutcome(
            decision="accept" if accept else "reject", reason=reason, improved_cases=[], regressed_cases=[],
            select_score=None, baseline_score=None,
            delta=None if not stats else float(stats["evals_new"] - stats["evals_old"]), ci_low=None, ci_high=None,
            n_cases=len(trial), evidence_json=json.dumps({"old": old.code(), "new": new.code(), **stats}, sort_keys=True))
        return [decision_row(ref, r, shadow, GATE, active, outcome, id_parts=(r, shadow, GATE),
                             scorer_version=run_suite(ref).scorer_version())]

    row = once(ref, "gate_decisions", "gate", key, rows)[0]
    return (shadow if row.decision == "accept" else active), ""


def policy_name(ref: RunRef, what: str) -> str:
    return f"{run_config(ref).suite}/evoalloc-{what}"


def registry_row(ref: RunRef, what: str, candidate_id: str, decision_id: str, version: int,
                 holdout: float | None = None) -> RegistryRow:
    return RegistryRow(run_id=ref.run_id, name=policy_name(ref, what), version=version, candidate_id=candidate_id,
                       stage="stable", alias="champion", decision_id=decision_id, select_score=None,
                       holdout_score=holdout, event_at=datetime.now(timezone.utc))


@task(name="register", **STAGE_OPTIONS)
def register_policy(ref: RunRef, r: int, policy_id: str, previous_id: str) -> str:
    """register: an accepted policy becomes the `<suite>/evoalloc-policy` champion."""
    if policy_id == previous_id:
        return policy_id
    store = store_for(ref.store_uri)
    decision = derived_id(ref.run_id, r, policy_id, GATE) if r else ""
    once(ref, "registry", "register", f"r{r:04d}", lambda: [registry_row(
        ref, "policy", policy_id, decision, 1 + sum(x.name == policy_name(ref, "policy")
                                                    for x in store.read_rows("registry", ref.run_id)))])
    return policy_id


def curve(prior: list[dict]) -> list[list]:
    """(full evaluations so far, best full score so far) after each full evaluation."""
    out, best = [], float("-inf")
    for a in prior:
        if a["full_score"] is not None:
            best = max(best, a["full_score"])
            out.append([len(out) + 1, best])
    return out


@task(name="finish", **STAGE_OPTIONS)
def finish(ref: RunRef, active: str) -> dict:
    """The run's summary (`evoalloc_run`: evaluation counts, the best-so-far curve over
    full evaluations, the best program's held-out score) and the best program registered."""
    store = store_for(ref.store_uri)
    if store.has_part("distillates", ref.run_id, "finish", "run"):
        return json.loads(store.read_part("distillates", ref.run_id, "finish", "run")[0].content)
    prior = allocations(ref)
    best = max((a for a in prior if a["full_score"] is not None), key=lambda a: a["full_score"])
    record = {"arm": section(ref).arm, "policy": active, "candidates": len(prior) - 1,
              "full_evals": sum(a["full_score"] is not None for a in prior),
              "partial_evals": sum(a["partial_run"] for a in prior),
              "discards": sum(a["full_score"] is None and a["partial_score"] is None for a in prior),
              "counterfactuals": sum(a["counterfactual"] for a in prior), "curve": curve(prior),
              "best_score": best["full_score"], "best_candidate": best["candidate_id"],
              "heldout_metric": holdout_score(ref, best["candidate_id"])}
    once(ref, "registry", "register", "best", lambda: [registry_row(
        ref, "best", best["candidate_id"], "", 1, record["heldout_metric"])])
    once(ref, "distillates", "finish", "run", lambda: [DistillateRow(
        run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "run"), round=-1, kind=RUN_KIND,
        content=json.dumps(record, sort_keys=True), uri=None, source_execution_ids=[],
        support=record["full_evals"], status="active")])
    return record
