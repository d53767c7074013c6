"""LIMBO's gate and register stages (the controller's memory).

Gate (the paper's: only successes enter memory). Every request of the controller's
stream gets one decision: accept iff the verifier passed its last attempt; the
candidate is the memory version the admission made (its content id; a candidates row,
parent the memory before), a rejected request's candidate is its trajectory's
execution id (nothing enters). The evidence names the request, the arm, the
controller's predictions, success, tokens, the admitted entry and the evicted ones, so
a decision explains itself in SQL. Deviation: the gate is online, so its one case is the
request that produced the trajectory (a stream request from the train split), not a
select split; held-out success is measured only at the end (register).

Register: after every block whose memory changed, the controller's memory becomes the
champion of ``toolsim/limbo`` (the current-memory alias); when the stream ends, the
final memory is registered ``stable`` with its holdout success (the holdout split under
retrieval at the full budget, no memory update; never used for a decision), and every
policy's entries go to ``limbo_memory``. Gate and register run in one transaction."""

from __future__ import annotations

import json
import random

from prefect import task

from schemas.ids import derived_id, seed_for
from schemas.limbo import LimboMemoryRow
from schemas.rows import CandidateRow, GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row as gate_row
from tasks.gate.stage import champion_row
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.loops.limbo.agent import run_request
from tasks.loops.limbo.memory import Entry, arm_of, context, memory_bytes, memory_id, memory_of
from tasks.loops.limbo.stages import block_key, config_of
from tasks.loops.limbo.stream import policy_name, state_of
from tasks.runtime.context import RunRef, cases_by_split, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS

GATE = "limbo_admission"
MEMORY_NAME = "toolsim/limbo"
HOLDOUT_SPLIT = "holdout"
HOLDOUT_ARM = "retrieval-full"


def _memory(ref: RunRef, mem_id: str) -> list[Entry]:
    return memory_of(store_for(ref.store_uri).get_blob(mem_id))


def decision_row(ref: RunRef, block: int, row, before: str) -> GateDecisionRow:
    """One request's admission decision (module docstring)."""
    old, new = {e.entry: e for e in _memory(ref, before)}, _memory(ref, row.mem_ver)
    added = [e.entry for e in new if e.entry not in old]
    evicted = [e for e in old if e not in {n.entry for n in new}]
    candidate = row.mem_ver if row.success else row.execution_id
    reason = (f"accept: request t={row.t} ({row.task_id}) succeeded under {row.arm} in {row.turns_used} turn(s), "
              f"{row.tokens} tokens; entry {added[0][:12]} admitted, {len(evicted)} evicted (FIFO)" if row.success else
              f"reject: request t={row.t} ({row.task_id}) failed under {row.arm}; only successes enter memory")
    evidence = {"t": row.t, "task_id": row.task_id, "arm": row.arm, "success": row.success, "tokens": row.tokens,
                "turns_used": row.turns_used, "execution_id": row.execution_id, "p_pred": row.p_pred,
                "cost_pred": row.cost_pred, "bonus": row.bonus, "features": json.loads(row.features),
                "admitted": added, "evicted": evicted, "memory_before": before, "memory_after": row.mem_ver,
                "cases": [row.task_id]}
    outcome = GateOutcome(
        decision="accept" if row.success else "reject", reason=reason,
        improved_cases=[row.task_id] if row.success else [], regressed_cases=[], select_score=float(row.success),
        baseline_score=None, delta=None, ci_low=None, ci_high=None, n_cases=1,
        evidence_json=dump_evidence(json_safe(evidence)))
    return gate_row(ref, row.t, candidate, GATE, before, outcome)


@task(name="gate", **STAGE_OPTIONS)
def gate_block(ref: RunRef, block: int, before: str) -> str:
    """gate: the decisions of the controller's block, and a candidate per new memory
    version; returns the memory in force after the block."""
    key = block_key(None, block)
    remember_decision_part(ref, "gate", key)
    store = store_for(ref.store_uri)
    rows = sorted(store.read_part("limbo_stream", ref.run_id, "play", key), key=lambda r: r.t)
    pairs, current = [], before
    for row in rows:
        pairs.append((row, current))
        current = row.mem_ver
    decisions = once(ref, "gate_decisions", "gate", key, lambda: [decision_row(ref, block, r, b) for r, b in pairs])
    once(ref, "candidates", "gate", key, lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=d.candidate_id, round=d.round, parent_ids=[d.baseline_id], operator="admit",
        proposer="stream", artifact_kind="memory", artifact_uri=store.blob_uri(d.candidate_id), island=-1,
        summary=d.reason[:300]) for d in decisions if d.decision == "accept"])
    return current


gate_block.on_rollback(undo_decision_part)


def stream_success(ref: RunRef, policy: str) -> float:
    rows = store_for(ref.store_uri).read_rows("limbo_stream", ref.run_id)
    mine = [r.success for r in rows if r.policy == policy]
    return sum(mine) / len(mine) if mine else 0.0


@task(name="register", **STAGE_OPTIONS)
def register_block(ref: RunRef, block: int) -> int:
    """register: the block's last admitted memory as the current-memory alias."""
    key = block_key(None, block)
    accepted = [d for d in store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", key)
                if d.decision == "accept"]
    return len(once(ref, "registry", "register", key, lambda: [
        champion_row(ref, MEMORY_NAME, d.candidate_id, "experimental", d.decision_id, stream_success(ref, "controller"))
        for d in accepted[-1:]]))


def holdout_success(ref: RunRef, mem_id: str) -> float:
    """The memory's success on the holdout split under ``HOLDOUT_ARM`` (no update)."""
    config, memory, arm = config_of(ref), _memory(ref, mem_id), arm_of(HOLDOUT_ARM)
    cases = cases_by_split(run_suite(ref), HOLDOUT_SPLIT)
    wins = [run_request(c, arm, *context(arm.mode, memory, c.payload["template"], config.limbo.retrieve_k),
                        random.Random(seed_for(config.seed, "holdout", c.case_id))).success for c in cases]
    return sum(wins) / len(wins) if wins else 0.0


@task(name="freeze", **STAGE_OPTIONS)
def finish_stream(ref: RunRef, states: dict[str, str]) -> str:
    """register (end of stream): every policy's entries in ``limbo_memory``; the
    controller's final memory ``stable`` with its holdout success."""
    config, store = config_of(ref), store_for(ref.store_uri)
    for policy, state_id in sorted(states.items()):
        state = state_of(json.loads(store.get_blob(state_id)), config.limbo)
        once(ref, "limbo_memory", "freeze", policy.replace(":", "-"), lambda: [
            LimboMemoryRow(run_id=ref.run_id, policy=policy, entry=e.entry, template=e.template, t_added=e.t_added,
                           traj_ref=e.traj_ref, evicted_t=state.evicted.get(e.entry))
            for e in sorted(state.added.values(), key=lambda e: e.t_added)])
    final = state_of(json.loads(store.get_blob(states["controller"])), config.limbo)
    mem_id = memory_id(final.memory)
    accepted = [d for d in store.read_rows("gate_decisions", ref.run_id) if d.candidate_id == mem_id]
    decision_id = accepted[0].decision_id if accepted else derived_id(ref.run_id, mem_id, "freeze")
    store.put_blob(memory_bytes(final.memory))
    once(ref, "registry", "freeze", "memory", lambda: [champion_row(
        ref, MEMORY_NAME, mem_id, "stable", decision_id, stream_success(ref, "controller"), holdout_success(ref, mem_id))])
    return mem_id


def limbo_summary(ref: RunRef) -> dict[str, object]:
    """What the CLI prints: per policy, stream accuracy and mean tokens; the controller
    against each fixed arm, paired per request (accuracy Δ with its 95% CI, tokens saved)."""
    config, store = config_of(ref), store_for(ref.store_uri)
    rows = store.read_rows("limbo_stream", ref.run_id)
    by = {}
    for r in rows:
        by.setdefault(r.policy, {})[r.task_id] = r
    out: dict[str, object] = {"run_id": ref.run_id}
    ctrl = by.get("controller", {})
    for policy in sorted(by):
        mine = by[policy]
        line = (f"accuracy {sum(r.success for r in mine.values()) / len(mine):.3f}, "
                f"tokens {sum(r.tokens for r in mine.values()) / len(mine):.0f} over {len(mine)} requests")
        if policy != "controller" and ctrl:
            cases, diffs = paired_differences({k: float(r.success) for k, r in ctrl.items()},
                                              {k: float(r.success) for k, r in mine.items()})
            low, high = paired_bootstrap_ci(diffs, resamples=config.limbo.resamples, seed=config.seed)
            saved = 1 - sum(r.tokens for r in ctrl.values()) / max(sum(r.tokens for r in mine.values()), 1)
            line += (f"; controller Δacc {sum(diffs) / len(diffs):+.3f} [{low:+.3f}, {high:+.3f}], "
                     f"tokens saved {saved:+.1%}")
        out[policy_name(None) if policy == "controller" else policy] = line
    decisions = [d for d in store.read_rows("gate_decisions", ref.run_id) if d.gate == GATE]
    out["memory admissions"] = f"{sum(d.decision == 'accept' for d in decisions)} of {len(decisions)} requests"
    return out
