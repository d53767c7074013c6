"""FORGE's prompt gate, its register, the final register and the summary.

Prompt gate (``prompt.prompt_gate``): the reflected prompt must first improve the mean
score on the training batch it was reflected from (same instances, same noise; those
scores are in ``fg_trajs``); only then is it run on the fixed validation set (the select
split, the only split this gate reads for its decision), and it is accepted when its
validation success beats the prompt in force. The evidence holds both steps' per-case
scores and the paired bootstrap CI on validation (recorded, not required). An accepted
prompt becomes the champion of ``toolsim/forge`` (so a run with ``start_from: champion``
continues from it). Gate and register run in one transaction (``undo_decision_part``).

After the last step the prompt in force (the best-validation one: acceptance requires a
strict improvement) is registered ``stable`` with its held-out success, measured once
here and never used for a decision."""

from __future__ import annotations

import json

from prefect import task

from schemas.forge import FGPromptRow
from schemas.ids import derived_id
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stage import champion_row
from tasks.harness_loops.tracking import track_version
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.loops.forge.prompt import mean, prompt_gate
from tasks.loops.forge.stages import HELDOUT, VALIDATION, config_of, harness_of, scores_on, split_payloads, step_key
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import registry_name

GATE = "forge_prompt"


def prompt_row(ref: RunRef, step: int, prompt_id: str, parent: str | None, batch: float | None,
               val: float | None, accepted: bool) -> FGPromptRow:
    return FGPromptRow(run_id=ref.run_id, id=prompt_id, step=step, parent=parent,
                       text=json.dumps(harness_of(ref, prompt_id), sort_keys=True), batch_score=batch,
                       val_score=val, accepted=accepted)


@task(name="validate_start", **STAGE_OPTIONS)
def validate_start(ref: RunRef, prompt_id: str) -> float:
    """The start prompt's validation score (the first best validation)."""
    rows = once(ref, "fg_prompts", "gate", "start", lambda: [prompt_row(
        ref, 0, prompt_id, None, None, mean(list(scores_on(ref, prompt_id, split_payloads(ref, VALIDATION)).values())),
        True)])
    return rows[0].val_score


def batch_scores(ref: RunRef, step: int, role: str) -> dict[str, float]:
    rows = store_for(ref.store_uri).read_part("fg_trajs", ref.run_id, "execute", f"{role}-{step_key(step)}")
    return {r.inst_id: r.score for r in rows}


def _decision(ref: RunRef, step: int, candidate: str, current: str) -> GateDecisionRow:
    config = config_of(ref)
    new_batch, old_batch = batch_scores(ref, step, "candidate"), batch_scores(ref, step, "current")
    b_new, b_old = mean(list(new_batch.values())), mean(list(old_batch.values()))
    evidence = {"batch": {"instances": sorted(old_batch), "candidate": [new_batch[i] for i in sorted(old_batch)],
                          "current": [old_batch[i] for i in sorted(old_batch)]}, "split": VALIDATION, "cases": []}
    cases, diffs, new, old, low, high = [], [], {}, {}, None, None
    if b_new > b_old:
        payloads = split_payloads(ref, VALIDATION)
        new, old = scores_on(ref, candidate, payloads), scores_on(ref, current, payloads)
        cases, diffs = paired_differences(new, old)
        low, high = paired_bootstrap_ci(diffs, resamples=config.forge.resamples, seed=config.seed)
        evidence.update(cases=cases, candidate=[new[c] for c in cases], baseline=[old[c] for c in cases])
    verdict = prompt_gate(b_new, b_old, mean(list(new.values())) if new else None, mean(list(old.values())))
    ci = f" (Δ {mean(diffs):+.3f}, 95% CI [{low:+.3f}, {high:+.3f}] over {len(cases)} select cases)" if cases else ""
    outcome = GateOutcome(
        decision="accept" if verdict.accepted else "reject",
        reason=verdict.reason + ci, improved_cases=[c for c, d in zip(cases, diffs) if d > 0],
        regressed_cases=[c for c, d in zip(cases, diffs) if d < 0],
        select_score=json_safe(mean(list(new.values()))) if new else None,
        baseline_score=json_safe(mean(list(old.values()))) if old else None,
        delta=json_safe(mean(diffs)) if cases else None, ci_low=json_safe(low), ci_high=json_safe(high),
        n_cases=len(cases), evidence_json=dump_evidence(json_safe(evidence)))
    return decision_row(ref, step, candidate, GATE, current, outcome)


@task(name="gate", **STAGE_OPTIONS)
def gate_prompt(ref: RunRef, step: int, candidate: str, current: str) -> str:
    """gate: the reflected prompt against the prompt in force; returns the prompt in
    force after the decision."""
    key = step_key(step)
    remember_decision_part(ref, "gate", key)

    def rows() -> list[GateDecisionRow]:
        decision = _decision(ref, step, candidate, current)
        track_version(ref, decision, "harness.py")
        return [decision]

    (decision,) = once(ref, "gate_decisions", "gate", key, rows)
    batch = mean(list(batch_scores(ref, step, "candidate").values()))
    once(ref, "fg_prompts", "gate", key, lambda: [prompt_row(ref, step, candidate, current, batch,
                                                             decision.select_score, decision.decision == "accept")])
    return candidate if decision.decision == "accept" else current


gate_prompt.on_rollback(undo_decision_part)


@task(name="register", **STAGE_OPTIONS)
def register_prompt(ref: RunRef, step: int) -> int:
    """register: an accepted prompt as the champion of ``toolsim/forge``."""
    key, name = step_key(step), registry_name(config_of(ref))
    accepted = [d for d in store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", key)
                if d.decision == "accept"]
    return len(once(ref, "registry", "register", key, lambda: [
        champion_row(ref, name, d.candidate_id, "experimental", d.decision_id, d.select_score) for d in accepted]))


@task(name="finish", **STAGE_OPTIONS)
def finish(ref: RunRef, prompt_id: str) -> str:
    """register (after the last step): the best-validation prompt as ``stable``, with
    its held-out success."""
    store = store_for(ref.store_uri)
    decisions = [d for d in store.read_rows("gate_decisions", ref.run_id)
                 if d.candidate_id == prompt_id and d.decision == "accept"]
    decision_id = decisions[0].decision_id if decisions else derived_id(ref.run_id, prompt_id, "finish")

    def rows() -> list[RegistryRow]:
        val = scores_on(ref, prompt_id, split_payloads(ref, VALIDATION))
        held = scores_on(ref, prompt_id, split_payloads(ref, HELDOUT))
        return [champion_row(ref, registry_name(config_of(ref)), prompt_id, "stable", decision_id,
                             mean(list(val.values())), mean(list(held.values())))]

    once(ref, "registry", "finish", "prompt", rows)
    return prompt_id


def forge_summary(ref: RunRef) -> dict[str, object]:
    """What the CLI prints."""
    store = store_for(ref.store_uri)
    decisions = store.read_rows("gate_decisions", ref.run_id)
    stable = [r for r in store.read_rows("registry", ref.run_id) if r.stage == "stable"]
    synth = store.read_rows("fg_synth", ref.run_id)
    out: dict[str, object] = {"run_id": ref.run_id}
    out["prompts"] = f"{sum(d.decision == 'accept' for d in decisions if d.gate == GATE)} of " \
                     f"{sum(d.gate == GATE for d in decisions)} reflected prompts accepted"
    out["synthetic instances"] = f"{sum(s.added_step is not None for s in synth)} of {len(synth)} admitted"
    if stable:
        out["validation success"] = round(stable[-1].select_score, 4)
        out["holdout success"] = round(stable[-1].holdout_score, 4)
        out["rules"] = len(harness_of(ref, stable[-1].candidate_id).get("rules", []))
    return out


