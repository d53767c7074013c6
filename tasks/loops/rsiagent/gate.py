"""RSIAgent's gate, register, freeze and test stages.

Gate (the paper gives no threshold; verification is its check). A memory version is
admitted when every entry it adds or revises comes from a verified recovery (by
construction of ``distill``; the evidence lists their source runs) and it does not lose
select-split success against the current memory on the same cases and noise (paired:
mean delta >= 0; the bootstrap CI is recorded, not required to exclude 0, since practice
is what the verifier checked). An identical version is rejected as nothing new. Only
select cases are read.

Register: each admitted version becomes the champion of ``toolsim/rsiagent`` (the store's
current memory, so a later run starts from it). Freeze: when preparation ends, the current
memory is registered ``stable``; the test stage then runs the target (test) split under
the frozen memory, no memory and the breadth-only memory, with no curriculum and no
memory update. Gate and register run in one transaction (``undo_decision_part``)."""

from __future__ import annotations


from prefect import task

from schemas.ids import derived_id
from schemas.rows import GateDecisionRow, RegistryRow
from schemas.rsiagent import RSATestRunRow
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row, paired_outcome, paired_scores
from tasks.gate.stage import champion_row
from tasks.harness_loops.tracking import track_version
from tasks.loops.rsiagent.memory import harness_of, memory_bytes
from tasks.loops.rsiagent.practice import execute, verify
from tasks.loops.rsiagent.stages import MEMORY_NAME, config_of, memory_of, round_key
from tasks.runtime.context import RunRef, cases_by_split, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS

GATE = "rsiagent_memory"
GATE_SPLIT = "select"
TARGET_SPLIT = "test"
HOLDOUT_SPLIT = "holdout"


def split_success(ref: RunRef, mem_id: str, split: str = GATE_SPLIT) -> dict[str, float]:
    harness = harness_of(memory_of(ref, mem_id))
    return {c.case_id: float(verify(c, execute(c, harness)).passed) for c in cases_by_split(run_suite(ref), split)}


def _decision(ref: RunRef, round_index: int, candidate: str, current: str) -> GateDecisionRow:
    config = config_of(ref)
    new, old = split_success(ref, candidate), split_success(ref, current)
    paired = paired_scores(new, old, resamples=config.rsiagent.resamples, seed=config.seed)
    before = {e.entry_id: e for e in memory_of(ref, current)}
    changed = [e for e in memory_of(ref, candidate) if before.get(e.entry_id) != e]
    accept = candidate != current and paired.delta >= 0
    reason = ("reject: identical to the current memory" if candidate == current else
              f"{'accept' if accept else 'reject'}: select success {paired.baseline_mean:.3f} -> "
              f"{paired.candidate_mean:.3f} (Δ {paired.delta:+.3f}, 95% CI [{paired.ci_low:+.3f}, "
              f"{paired.ci_high:+.3f}]) over {len(paired.cases)} select cases; {len(changed)} entries added or "
              "revised, each from a verified recovery")
    evidence = {"split": GATE_SPLIT,
                "entries": [{"entry_id": e.entry_id, "condition": dict(e.condition), "source_runs": list(e.source_runs)}
                            for e in changed]}
    outcome = paired_outcome(paired, "accept" if accept else "reject", reason, evidence)
    return decision_row(ref, round_index, candidate, GATE, current, outcome)


@task(name="gate", **STAGE_OPTIONS)
def gate_memory(ref: RunRef, round_index: int, candidate: str, current: str) -> str:
    """gate: the round's memory version against the current memory; returns the memory
    in force after the decision."""
    key = round_key(round_index)
    remember_decision_part(ref, "gate", key)
    def rows() -> list[GateDecisionRow]:
        decision = _decision(ref, round_index, candidate, current)
        track_version(ref, decision, "memory.json")
        return [decision]

    rows = once(ref, "gate_decisions", "gate", key, rows)
    return rows[0].candidate_id if rows[0].decision == "accept" else current


gate_memory.on_rollback(undo_decision_part)


@task(name="register", **STAGE_OPTIONS)
def register_memory(ref: RunRef, round_index: int) -> int:
    """register: an admitted version as the champion (the current memory alias)."""
    key = round_key(round_index)
    accepted = [d for d in store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", key)
                if d.decision == "accept"]
    return len(once(ref, "registry", "register", key, lambda: [
        champion_row(ref, MEMORY_NAME, d.candidate_id, "experimental", d.decision_id, d.select_score) for d in accepted]))


@task(name="freeze", **STAGE_OPTIONS)
def freeze_memory(ref: RunRef, mem_id: str) -> str:
    """register (end of preparation): the current memory, frozen as ``stable``, with its
    holdout success measured once here (never used for a decision)."""
    decisions = [d for d in store_for(ref.store_uri).read_rows("gate_decisions", ref.run_id)
                 if d.candidate_id == mem_id and d.decision == "accept"]
    decision_id = decisions[0].decision_id if decisions else derived_id(ref.run_id, mem_id, "freeze")
    def rows() -> list[RegistryRow]:
        select, holdout = split_success(ref, mem_id), split_success(ref, mem_id, HOLDOUT_SPLIT)
        return [champion_row(ref, MEMORY_NAME, mem_id, "stable", decision_id, sum(select.values()) / max(len(select), 1),
                              sum(holdout.values()) / max(len(holdout), 1))]

    once(ref, "registry", "freeze", "memory", rows)
    return mem_id


def empty_memory(ref: RunRef) -> str:
    return store_for(ref.store_uri).put_blob(memory_bytes([]))


@task(name="test", **STAGE_OPTIONS)
def test_targets(ref: RunRef, snapshots: dict[str, str]) -> int:
    """execute + verify on the target split under each frozen snapshot (no update)."""
    grader, targets = run_suite(ref).scorer_version(), cases_by_split(run_suite(ref), TARGET_SPLIT)

    def rows() -> list[RSATestRunRow]:
        out = []
        for arm, mem_id in sorted(snapshots.items()):
            harness = harness_of(memory_of(ref, mem_id))
            for case in targets:
                verdict = verify(case, execute(case, harness))
                out.append(RSATestRunRow(run_id=ref.run_id, task_id=case.case_id, arm=arm, mem_snapshot=mem_id,
                                         partial=verdict.progress, binary=verdict.passed, grader_ver=grader))
        return out

    return len(once(ref, "rsa_test_runs", "test", "targets", rows))


def rsiagent_summary(ref: RunRef) -> dict[str, object]:
    """What the CLI prints: per arm, target binary and partial success; decisions."""
    store = store_for(ref.store_uri)
    out: dict[str, object] = {"run_id": ref.run_id}
    tests = store.read_rows("rsa_test_runs", ref.run_id)
    for arm in sorted({t.arm for t in tests}):
        mine = [t for t in tests if t.arm == arm]
        out[f"target {arm}"] = (f"binary {sum(t.binary for t in mine) / len(mine):.3f}, partial "
                                f"{sum(t.partial for t in mine) / len(mine):.3f} over {len(mine)} tasks")
    decisions = [d for d in store.read_rows("gate_decisions", ref.run_id) if d.gate == GATE]
    out["memory versions"] = f"{sum(d.decision == 'accept' for d in decisions)} of {len(decisions)} admitted"
    return out


