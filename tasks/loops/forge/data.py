"""FORGE's data gate and its register, the stagnation counter and the step's cost.

The data gate opens only when the best validation score has not improved for
``forge.patience`` consecutive steps (``prompt.stagnation``; the counter restarts after
each synthesis). The generator then synthesises from the failure memory: for each of
the ``modes_per_synthesis`` most supported modes, from the train instance of its first
supporting trajectory, ``per_strategy`` instances per strategy (``synth.generate``). The
verifier (``synth.verify``) admits an instance only when the oracle solves it and it
really targets the mode under the prompt in force; admitted instances join the training
set (a new version, a candidate) and never the validation or held-out split. The
decision (gate ``forge_data``) lists every instance's verification as its evidence; an
admitted version becomes the champion of ``toolsim/forge-data``. Gate and register run in
one transaction (``undo_decision_part``)."""

from __future__ import annotations

import json

from prefect import task

from schemas.forge import FGCostRow, FGStagnationRow, FGSynthRow
from schemas.rows import GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.loops.forge.gate import GATE as PROMPT_GATE
from tasks.gate.stage import champion_row
from tasks.loops.forge.modes import memory_of, ranked
from tasks.loops.forge.prompt import stagnation
from tasks.loops.forge.stages import (DATA_NAME, config_of, data_bytes, harness_of, publish, step_key, synthetic_of,
                                      training_set)
from tasks.loops.forge.synth import synthesize
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS

GATE = "forge_data"


def _val_of(ref: RunRef, prompt_id: str) -> float:
    rows = [p for p in store_for(ref.store_uri).read_rows("fg_prompts", ref.run_id)
            if p.id == prompt_id and p.accepted and p.val_score is not None]
    return rows[0].val_score


def _previous(ref: RunRef, step: int) -> tuple[float, int]:
    """(best validation, steps since it improved) before ``step``."""
    store = store_for(ref.store_uri)
    if step == 0:
        return store.read_part("fg_prompts", ref.run_id, "gate", "start")[0].val_score, 0
    (last,) = store.read_part("fg_stagnation", ref.run_id, "data_gate", step_key(step - 1))
    return last.best_val, 0 if last.synthesized else last.steps_since_improve


def synthesize_rows(ref: RunRef, step: int, prompt_id: str, data_id: str, memory_id: str) -> list[FGSynthRow]:
    """Every generated instance of the step with its verification (module docstring)."""
    config, store = config_of(ref), store_for(ref.store_uri)
    section, pool = config.forge, training_set(ref, data_id)
    inst_of = {t.id: t.inst_id for t in store.read_rows("fg_trajs", ref.run_id)}
    seen = set(pool) | {s.inst_id for s in store.read_rows("fg_synth", ref.run_id)}
    modes = ranked(memory_of(store.get_blob(memory_id)), section.modes_per_synthesis)
    made = synthesize(modes, pool, inst_of, harness_of(ref, prompt_id), section.strategies, section.per_strategy,
                      config.seed, step, seen)
    return [FGSynthRow(
        run_id=ref.run_id, inst_id=m.inst_id, mode_id=m.mode.mode_id, strategy=m.strategy, source_inst=m.source_id,
        payload=json.dumps(m.payload, sort_keys=True), valid=m.check.valid, targets_mode=m.check.targets_mode,
        oracle_edits=m.check.oracle_edits,
        exhibited=None if m.check.exhibited is None else json.dumps(list(m.check.exhibited)),
        verify_calls=m.check.calls, added_step=step if m.admitted else None) for m in made]


def _decision(ref: RunRef, step: int, candidate: str, current: str, rows: list[FGSynthRow]) -> GateDecisionRow:
    admitted = [r for r in rows if r.added_step is not None]
    by = {s: (sum(r.strategy == s and r.added_step is not None for r in rows), sum(r.strategy == s for r in rows))
          for s in config_of(ref).forge.strategies}
    reason = (f"{'accept' if admitted else 'reject'}: {len(admitted)} of {len(rows)} synthesised instances valid "
              f"and targeting their mode (" + ", ".join(f"{s} {a}/{n}" for s, (a, n) in by.items()) + ")")
    evidence = {"instances": [{"inst_id": r.inst_id, "mode_id": r.mode_id, "strategy": r.strategy,
                               "source_inst": r.source_inst, "valid": r.valid, "targets_mode": r.targets_mode,
                               "oracle_edits": r.oracle_edits, "exhibited": r.exhibited} for r in rows]}
    outcome = GateOutcome(
        decision="accept" if admitted else "reject", reason=reason, improved_cases=[r.inst_id for r in admitted],
        regressed_cases=[], select_score=None, baseline_score=None, delta=None, ci_low=None, ci_high=None,
        n_cases=len(rows), evidence_json=dump_evidence(evidence))
    return decision_row(ref, step, candidate, GATE, current, outcome)


@task(name="data_gate", **STAGE_OPTIONS)
def data_gate(ref: RunRef, step: int, prompt_id: str, data_id: str, memory_id: str) -> str:
    """gate (data): the stagnation counter; on stagnation, verified synthesis. Returns the
    training set in force after the decision."""
    config, key = config_of(ref), step_key(step)
    remember_decision_part(ref, "data_gate", key)
    best, since = _previous(ref, step)
    state = stagnation(best, since, _val_of(ref, prompt_id), config.forge.patience)
    opened = state.synthesize and config.forge.synthesis
    rows = once(ref, "fg_synth", "data_gate", key, lambda: synthesize_rows(ref, step, prompt_id, data_id, memory_id)
                if opened else [])
    once(ref, "fg_stagnation", "data_gate", key, lambda: [FGStagnationRow(
        run_id=ref.run_id, step=step, best_val=state.best_val, steps_since_improve=state.steps_since_improve,
        synthesized=opened)])
    _cost(ref, step, rows)
    if not opened:
        return data_id
    admitted = {r.inst_id: json.loads(r.payload) for r in rows if r.added_step is not None}
    new = data_id
    if admitted:
        synthetic = {**synthetic_of(ref, data_id), **admitted}
        new = publish(ref, "data_gate", key, data_bytes(synthetic), step, [data_id], "synthesize", "training_set",
                      f"step {step}: +{len(admitted)} verified synthetic instances ({len(synthetic)} in all)")
    (decision,) = once(ref, "gate_decisions", "data_gate", key, lambda: [_decision(ref, step, new, data_id, rows)])
    return new if decision.decision == "accept" else data_id


data_gate.on_rollback(undo_decision_part)


def _cost(ref: RunRef, step: int, rows: list[FGSynthRow]) -> None:
    store, key = store_for(ref.store_uri), step_key(step)
    trajs = sum(t.step == step for t in store.read_rows("fg_trajs", ref.run_id))
    gated = [d for d in store.read_rows("gate_decisions", ref.run_id) if d.gate == PROMPT_GATE and d.round == step]
    eval_calls = trajs + sum(2 * d.n_cases for d in gated)
    verify_calls = sum(r.verify_calls for r in rows)
    once(ref, "fg_cost", "data_gate", key, lambda: [FGCostRow(run_id=ref.run_id, step=step, eval_calls=eval_calls,
                                                              gen_calls=len(rows), verify_calls=verify_calls)])


@task(name="register_data", **STAGE_OPTIONS)
def register_data(ref: RunRef, step: int) -> int:
    """register: an admitted training set as the champion of ``toolsim/forge-data``."""
    store, key = store_for(ref.store_uri), step_key(step)
    if not store.has_part("gate_decisions", ref.run_id, "data_gate", key):
        return 0
    accepted = [d for d in store.read_part("gate_decisions", ref.run_id, "data_gate", key) if d.decision == "accept"]
    return len(once(ref, "registry", "register_data", key, lambda: [
        champion_row(ref, DATA_NAME, d.candidate_id, "experimental", d.decision_id, None) for d in accepted]))
