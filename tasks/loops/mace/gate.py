"""MACE's gate, register, freeze and test stages: memory is an artifact like any other.

Gate (the paper's feedback update has no admission test; this is the ratchet's). A memory
version is admitted when it is new and does not lose select-split success against the
current memory under greedy selection on the same requests (paired: mean delta >= 0;
the bootstrap CI is recorded). The evidence names the cases, both sides' results, and
the units the version added and the arms whose statistics moved. Only select cases are
read.

Register: each admitted version becomes the champion of ``toolsim/mace`` (the current
memory alias; a later run with ``start_from: champion`` starts from it). Freeze: the
run's last memory is registered ``stable`` with its holdout success measured once (never
used for a decision). Test: the test split under the frozen memory, the starting memory
(the feedback update off) and no memory, greedy, no update. Gate and register run in
one transaction (``undo_decision_part``)."""

from __future__ import annotations


from prefect import task

from schemas.ids import derived_id
from schemas.mace import MaceRunRow
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row, paired_outcome, paired_scores
from tasks.gate.stage import champion_row
from tasks.harness_loops.tracking import track_version
from tasks.loops.mace.memory import Memory
from tasks.loops.mace.practice import success_on
from tasks.loops.mace.stages import config_of, limits_of, memory_at, round_key
from tasks.runtime.context import RunRef, cases_by_split, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS

GATE = "mace_memory"
MEMORY_NAME = "toolsim/mace"
"""The registry name of the current memory (global to the store)."""
GATE_SPLIT, HOLDOUT_SPLIT, TEST_SPLIT = "select", "holdout", "test"


def split_success(ref: RunRef, memory: Memory, split: str) -> dict[str, float]:
    config = config_of(ref)
    return success_on(memory, cases_by_split(run_suite(ref), split), limits_of(config), config.mace.selector)


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def _decision(ref: RunRef, round_index: int, candidate: str, current: str) -> GateDecisionRow:
    config = config_of(ref)
    cand_mem, cur_mem = memory_at(ref, candidate), memory_at(ref, current)
    new, old = split_success(ref, cand_mem, GATE_SPLIT), split_success(ref, cur_mem, GATE_SPLIT)
    paired = paired_scores(new, old, resamples=config.mace.resamples, seed=config.seed)
    accept = candidate != current and paired.delta >= 0
    added = sorted(set(cand_mem.units) - set(cur_mem.units))
    moved = sorted(k for k, v in cand_mem.arms.items() if k.startswith("joint|") and cur_mem.arms.get(k) != v)
    reason = ("reject: identical to the current memory" if candidate == current else
              f"{'accept' if accept else 'reject'}: select success {paired.baseline_mean:.3f} -> "
              f"{paired.candidate_mean:.3f} (Δ {paired.delta:+.3f}, 95% CI [{paired.ci_low:+.3f}, "
              f"{paired.ci_high:+.3f}]) over {len(paired.cases)} select "
              f"cases; {len(added)} units added, {len(moved)} (set, form) arms updated")
    evidence = {"split": GATE_SPLIT, "added_units": added, "moved_arms": moved,
                "utility": {u: cand_mem.utility[u] for u in sorted(cand_mem.units)}}
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
        track_version(ref, decision, "memgog.json")
        return [decision]

    decision = once(ref, "gate_decisions", "gate", key, rows)[0]
    return decision.candidate_id if decision.decision == "accept" else current


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
    """register (end of the run): the current memory as ``stable``, with its holdout
    success measured once here."""
    decisions = [d for d in store_for(ref.store_uri).read_rows("gate_decisions", ref.run_id)
                 if d.candidate_id == mem_id and d.decision == "accept"]
    decision_id = decisions[0].decision_id if decisions else derived_id(ref.run_id, mem_id, "freeze")

    def rows() -> list[RegistryRow]:
        memory = memory_at(ref, mem_id)
        select, holdout = split_success(ref, memory, GATE_SPLIT), split_success(ref, memory, HOLDOUT_SPLIT)
        return [champion_row(ref, MEMORY_NAME, mem_id, "stable", decision_id, _mean(select.values()), _mean(holdout.values()))]

    once(ref, "registry", "freeze", "memory", rows)
    return mem_id


@task(name="test", **STAGE_OPTIONS)
def test_arms(ref: RunRef, snapshots: dict[str, str]) -> int:
    """execute + score on the test split under each memory snapshot (greedy, no update)."""
    def rows() -> list[MaceRunRow]:
        out = []
        for arm, mem_id in sorted(snapshots.items()):
            memory = memory_at(ref, mem_id) if mem_id else Memory()
            for case_id, result in sorted(split_success(ref, memory, TEST_SPLIT).items()):
                out.append(MaceRunRow(run_id=ref.run_id, episode_id=derived_id(ref.run_id, "test", arm, case_id),
                                      round=-1, phase="test", arm=arm, bench="toolsim", task_id=case_id,
                                      mem_ver=mem_id, result=result))
        return out

    return len(once(ref, "mace_runs", "test", "arms", rows))


def mace_summary(ref: RunRef) -> dict[str, object]:
    """What the CLI prints: per arm, test success; memory versions admitted."""
    store = store_for(ref.store_uri)
    out: dict[str, object] = {"run_id": ref.run_id}
    tests = [r for r in store.read_rows("mace_runs", ref.run_id) if r.phase == "test"]
    for arm in sorted({t.arm for t in tests}):
        mine = [t.result for t in tests if t.arm == arm]
        out[f"test {arm}"] = f"success {_mean(mine):.3f} over {len(mine)} requests"
    decisions = [d for d in store.read_rows("gate_decisions", ref.run_id) if d.gate == GATE]
    out["memory versions"] = f"{sum(d.decision == 'accept' for d in decisions)} of {len(decisions)} admitted"
    return out
