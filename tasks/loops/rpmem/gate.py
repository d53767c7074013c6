"""RPMem's gate, register, memory (write path) and base-swap stages.

Gate (the paper's only admission is the learned per-coordinate gate inside the memory;
this is the platform's gate over memory systems). A round's memory system is admitted
when its mean select recall (over each user's sessions 1..N and keys) beats the current
system's by more than `rpmem.min_gain`, paired per select user, with the bootstrap CI
recorded; evidence lists every user's recall on both sides and the recall per number of
sessions. Only select users are read. Register: an admitted system becomes the champion
of ``arith/rpmem`` (the current memory alias). Gate and register run in one transaction.

Memory: the champion writes every holdout user's sessions in order into a memory of
constant size (`rpm_sessions`, `rpm_gate_stats`) and answers every key after each
(`rpm_qa`). Swap: on the other base, a decoder trained with the encoder and gate reused
against a whole system trained from scratch for the same steps (`rpm_swap`)."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import fmean

import torch
from prefect import task

from schemas.ids import derived_id
from schemas.rows import GateDecisionRow, RegistryRow
from schemas.rpmem import RPMGateStatRow, RPMQARow, RPMSessionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.loops.rpmem.sessions import user_id
from tasks.loops.rpmem.stages import (SCORER, config_of, load_system, users_of,
                                      world)
from tasks.loops.rpmem.train import stream
from tasks.runtime.context import RunRef, store_for, tracker_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name

GATE = "rpmem_recall"


def round_key(round_index: int) -> str:
    return f"r{round_index:03d}"


def recall(ref: RunRef, candidate_id: str, split: str, base_name: str | None = None):
    """(writes, correct (U, N, K)) of a memory system streaming a split's users."""
    w = world(ref, base_name)
    return stream(w.base, w.states, load_system(ref, candidate_id), users_of(ref, split), w.keys)


def user_recall(ref: RunRef, candidate_id: str) -> tuple[dict[str, float], list[float]]:
    """Select recall per user (mean over sessions and keys) and per number of sessions."""
    correct = recall(ref, candidate_id, "select")[1].float()
    return ({user_id("select", u): float(v) for u, v in enumerate(correct.mean((1, 2)))},
            [float(v) for v in correct.mean((0, 2))])


def _decision(ref: RunRef, round_index: int, candidate: str, current: str) -> GateDecisionRow:
    section = config_of(ref).rpmem
    (new, new_n), (old, old_n) = user_recall(ref, candidate), user_recall(ref, current)
    users, diffs = paired_differences(new, old)
    low, high = paired_bootstrap_ci(diffs, resamples=section.resamples, seed=config_of(ref).seed)
    delta = fmean(diffs)
    accept = candidate != current and delta > section.min_gain
    reason = ("reject: identical to the current memory system" if candidate == current else
              f"{'accept' if accept else 'reject'}: select recall {fmean(old.values()):.3f} -> "
              f"{fmean(new.values()):.3f} (Δ {delta:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}], needs > "
              f"{section.min_gain:+.3f}) over {len(users)} select users x {section.eval_sessions} sessions")
    evidence = {"split": "select", "users": users, "candidate": [new[u] for u in users],
                "baseline": [old[u] for u in users], "candidate_by_n": new_n, "baseline_by_n": old_n}
    outcome = GateOutcome(
        decision="accept" if accept else "reject", reason=reason,
        improved_cases=[u for u, d in zip(users, diffs) if d > 0],
        regressed_cases=[u for u, d in zip(users, diffs) if d < 0], select_score=fmean(new.values()),
        baseline_score=fmean(old.values()), delta=delta, ci_low=json_safe(low), ci_high=json_safe(high),
        n_cases=len(users), evidence_json=dump_evidence(json_safe(evidence)))
    return decision_row(ref, round_index, candidate, GATE, current, outcome, scorer_version=SCORER)


@task(name="gate", **STAGE_OPTIONS)
def gate_memory(ref: RunRef, round_index: int, candidate: str, current: str) -> str:
    """gate: the round's memory system against the current one; returns the one in force."""
    key = round_key(round_index)
    remember_decision_part(ref, "gate", key)

    def rows() -> list[GateDecisionRow]:
        d = _decision(ref, round_index, candidate, current)
        tracker_for(ref).log_candidate(
            ref.run_id, candidate, params={"round": str(round_index), "parent": current[:12]},
            metrics={"select_recall": d.select_score, "baseline": d.baseline_score, "delta": d.delta},
            tags={"gate": GATE, "decision": d.decision},
            artifact=store_for(ref.store_uri).get_blob(candidate), artifact_name="rpmem.pt")
        return [d]

    rows = once(ref, "gate_decisions", "gate", key, rows)
    return rows[0].candidate_id if rows[0].decision == "accept" else current


gate_memory.on_rollback(undo_decision_part)


@task(name="register", **STAGE_OPTIONS)
def register_memory(ref: RunRef, round_index: int) -> int:
    """register: an admitted system as the champion of ``arith/rpmem`` (the current memory)."""
    key, name = round_key(round_index), registry_name(config_of(ref))
    accepted = [d for d in store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", key)
                if d.decision == "accept"]

    def rows() -> list[RegistryRow]:
        version = 1 + max((r.version for r in store_for(ref.store_uri).read_rows("registry") if r.name == name),
                          default=0)
        return [RegistryRow(run_id=ref.run_id, name=name, version=version, candidate_id=d.candidate_id,
                            stage="experimental", alias=CHAMPION, decision_id=d.decision_id,
                            select_score=d.select_score, holdout_score=None, event_at=datetime.now(timezone.utc))
                for d in accepted]
    return len(once(ref, "registry", "register", key, rows))


def qa_rows(ref: RunRef, candidate_id: str, base_name: str, correct: torch.Tensor) -> list[RPMQARow]:
    keys = world(ref, base_name).keys
    return [RPMQARow(run_id=ref.run_id, candidate_id=candidate_id, base=base_name, user=user_id("holdout", u),
                     split="holdout", n_sessions=n + 1, key=keys[k], correct=bool(correct[u, n, k]))
            for u in range(correct.shape[0]) for n in range(correct.shape[1]) for k in range(correct.shape[2])]


@task(name="execute", **STAGE_OPTIONS)
def write_memory(ref: RunRef, candidate_id: str) -> float:
    """execute: the champion writes the holdout users' sessions and answers after each;
    returns its holdout recall after the last session."""
    base_name, key = config_of(ref).rpmem.base, candidate_id[:24]
    store = store_for(ref.store_uri)
    if not store.has_part("rpm_qa", ref.run_id, "memory", key):
        writes, correct = recall(ref, candidate_id, "holdout")
        store.write_part("rpm_sessions", ref.run_id, "memory", key, [RPMSessionRow(
            run_id=ref.run_id, candidate_id=candidate_id, user=user_id("holdout", w.user), split="holdout",
            idx=w.idx, latent_hash=w.latent_hash, write_ms=w.write_ms) for w in writes])
        store.write_part("rpm_gate_stats", ref.run_id, "memory", key, [RPMGateStatRow(
            run_id=ref.run_id, candidate_id=candidate_id, user=user_id("holdout", w.user), idx=w.idx,
            mean_keep=w.mean_keep, mean_write=w.mean_write) for w in writes])
        store.write_part("rpm_qa", ref.run_id, "memory", key, qa_rows(ref, candidate_id, base_name, correct))
    rows = store.read_part("rpm_qa", ref.run_id, "memory", key)
    last = max(r.n_sessions for r in rows)
    return fmean(r.correct for r in rows if r.n_sessions == last)


@task(name="register-final", **STAGE_OPTIONS)
def freeze_memory(ref: RunRef, candidate_id: str, holdout: float) -> str:
    """register: the memory system in force at the end is frozen (stable, champion) with its
    select recall and its holdout recall after the last session, measured only here."""
    name = registry_name(config_of(ref))

    def rows() -> list[RegistryRow]:
        version = 1 + max((r.version for r in store_for(ref.store_uri).read_rows("registry") if r.name == name),
                          default=0)
        select = fmean(user_recall(ref, candidate_id)[0].values())
        return [RegistryRow(run_id=ref.run_id, name=name, version=version, candidate_id=candidate_id, stage="stable",
                            alias=CHAMPION, decision_id=derived_id(ref.run_id, candidate_id, GATE, "final"),
                            select_score=select, holdout_score=holdout, event_at=datetime.now(timezone.utc))]
    return once(ref, "registry", "register", "final", rows)[0].candidate_id
