"""Stage tasks of the modular_rsi loop, second half: evolve_modules (each routed module
edits the round's base; the gate's three checks), integrate (merge the accepted
module versions), the champion's decision and registration, the benchmark evals and
the summary.

Every module edit gets one ``gate_decisions`` row (gate ``mrsi_module``): accept iff
static, overfit and run checks pass; its evidence holds each check's verdict and
reason, the edit's diff and the finding it answers. The run check uses two tasks of
the round's pool batch, as the paper's does (``select_score``: the edit's success on
them, ``baseline_score``: the base's). The champion's row (gate ``mrsi_champion``)
compares the last integration with the seed on the select split, paired; it is
registered when no worse (else the seed stays champion). The benchmark (test split)
is run only for ``mrsi_evals``, after every decision."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.ids import seed_for
from schemas.modular_rsi import MRSIEvalRow, MRSIIntegrationRow, MRSIModuleEditRow
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate import rows as gate_rows
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.harness_loops.episodes import case_index, harness_document, run_missing
from tasks.harness_loops.llm_edit import NoLLMEdit, unusable_row
from tasks.harness_loops.tracking import track_candidate
from tasks.loops.modular_rsi.contrast import Finding
from tasks.loops.modular_rsi.evolve import ModuleEdit, case_literals, integrate, version
from tasks.loops.modular_rsi.llm import llm_modify
from tasks.loops.modular_rsi.modules import MODULES
from tasks.loops.modular_rsi.rounds import Gated, chained_edits, module_edits
from tasks.loops.modular_rsi.stages import (STAGE, base_document, base_of, batch_traces, pool_templates, publish,
                                            round_key, runner, traces)
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name
from tasks.stages.register import holdout_score

MODULE_GATE, CHAMPION_GATE = "mrsi_module", "mrsi_champion"


def pool_literals(ref: RunRef) -> set[str]:
    pool = set(pool_templates(ref))
    return case_literals([c.payload for c in case_index(ref).values() if c.payload["template"] in pool])


def rejected(ref: RunRef, round_index: int) -> frozenset[str]:
    return frozenset(r.edit_key for r in store_for(ref.store_uri).read_rows("mrsi_module_edits", ref.run_id)
                     if r.round < round_index and not r.accepted)


def gated_edits(ref: RunRef, round_index: int, refused: list[NoLLMEdit] | None = None) -> list[Gated]:
    """The round's edits through the three checks; under `proposer: llm` the answers that
    gave no edit are appended to ``refused``."""
    config, store = run_config(ref), store_for(ref.store_uri)
    cases, got = batch_traces(ref, round_index)
    found = [Finding(f.module, f.event, tuple(f.support_task_ids))
             for f in store.read_part("mrsi_findings", ref.run_id, STAGE, round_key(round_index))]
    args = (base_document(ref, round_index), cases, got, found, runner(ref, round_index, "gate"),
            pool_literals(ref), rejected(ref, round_index))
    if config.modular_rsi.mode == "monolithic":
        return chained_edits(*args)[0]
    llm = config.proposer == "llm"
    return module_edits(*args, modifier=llm_modifier(ref, round_index, [] if refused is None else refused)
                        if llm else None)


def llm_modifier(ref: RunRef, round_index: int, refused: list[NoLLMEdit]):
    """The `proposer: llm` modifier: the endpoint edits the finding's module, shown the
    module's earlier edits and verdicts; an answer that is no edit gives none and is
    appended to ``refused`` (with its call)."""
    config = run_config(ref)
    earlier = [e for e in store_for(ref.store_uri).read_rows("mrsi_module_edits", ref.run_id) if e.round < round_index]

    def modify(base, finding, traces, _rejected):
        history = [f"round {e.round}: {e.diff[:300]} -> {'accepted' if e.accepted else 'rejected'}"
                   for e in earlier if e.module == finding.module]
        rng = random.Random(seed_for(config.seed, "mrsi_llm", round_index, finding.module))
        try:
            return llm_modify(base, finding, traces, history, config.evolve, rng)
        except NoLLMEdit as why:
            if why.asked:
                refused.append(why)
            return None
    return modify


def edit_row(ref: RunRef, round_index: int, gated: Gated) -> MRSIModuleEditRow:
    edit = gated.edit
    candidate = publish(ref, round_index, edit.document, edit.operator, [base_of(ref, round_index)],
                        f"{edit.module}: {edit.rationale}")
    return MRSIModuleEditRow(
        run_id=ref.run_id, id=edit.edit_id, round=round_index, module=edit.module, base_ver=edit.base_ver,
        diff=edit.diff, operator=edit.operator, edit_key=edit.key, rationale=edit.rationale[:2000],
        candidate_id=candidate, gate_static=gated.static[0], gate_overfit=gated.overfit[0],
        gate_run=gated.run[0] if gated.after else None, static_reason=gated.static[1],
        overfit_reason=gated.overfit[1], run_reason=gated.run[1], accepted=gated.accepted)


def decision_row(ref: RunRef, row: MRSIModuleEditRow, gated: Gated) -> GateDecisionRow:
    checks = {"static": (row.gate_static, row.static_reason), "overfit": (row.gate_overfit, row.overfit_reason),
              "run": (row.gate_run, row.run_reason)}
    failed = next((name for name, (ok, _) in checks.items() if not ok), None)
    reason = (f"accept: {row.module} edit passes static, overfit and 2-task run checks ({row.run_reason})"
              if failed is None else f"reject: {failed} check: {checks[failed][1]}")
    cases = sorted(gated.after)
    before, after = [gated.before[c] for c in cases], [gated.after[c] for c in cases]
    evidence = {"module": row.module, "edit_id": row.id, "base_ver": row.base_ver, "operator": row.operator,
                "diff": json.loads(row.diff), "checks": {k: {"passed": ok, "reason": why} for k, (ok, why) in
                                                         checks.items()}, "gate_tasks": cases}
    outcome = GateOutcome(
        decision="accept" if row.accepted else "reject", reason=reason,
        improved_cases=[c for c in cases if gated.after[c] > gated.before[c]],
        regressed_cases=[c for c in cases if gated.after[c] < gated.before[c]],
        select_score=fmean(after) if cases else None, baseline_score=fmean(before) if cases else None,
        delta=fmean(after) - fmean(before) if cases else None, ci_low=None, ci_high=None, n_cases=len(cases),
        evidence_json=dump_evidence(evidence))
    return gate_rows.decision_row(ref, row.round, row.candidate_id, MODULE_GATE, base_of(ref, row.round), outcome,
                                  id_parts=(row.id, MODULE_GATE))


@task(name="evolve_modules", **STAGE_OPTIONS)
def evolve_modules(ref: RunRef, round_index: int) -> list[str]:
    """sample + gate: the modifier edits each routed module from the same base (the
    ablation: the whole harness in sequence); three checks each. Returns accepted edit ids."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    if not store.has_part("mrsi_module_edits", ref.run_id, STAGE, key):
        refused: list[NoLLMEdit] = []
        gated = gated_edits(ref, round_index, refused)
        rows = [edit_row(ref, round_index, g) for g in gated]
        decisions = [decision_row(ref, r, g) for r, g in zip(rows, gated)]
        if run_config(ref).proposer == "llm":  # the answers that gave no module edit, with their calls
            unusable = {u.candidate_id: u for u in (unusable_row(ref, round_index, base_of(ref, round_index), why)
                                                    for why in refused)}
            store.write_part("candidates", ref.run_id, "llm_unusable", key, list(unusable.values()))
        remember_decision_part(ref, "gate", key)
        store.write_part("gate_decisions", ref.run_id, "gate", key, decisions)
        store.write_part("mrsi_module_edits", ref.run_id, STAGE, key, rows)
    edits = store.read_part("mrsi_module_edits", ref.run_id, STAGE, key)
    reporter().advance(0, f"round {round_index}: {sum(e.accepted for e in edits)}/{len(edits)} module edits pass")
    return [e.id for e in edits if e.accepted]


evolve_modules.on_rollback(undo_decision_part)


def integration_row(ref: RunRef, round_index: int) -> MRSIIntegrationRow:
    base = base_document(ref, round_index)
    edits = [e for e in store_for(ref.store_uri).read_part("mrsi_module_edits", ref.run_id, STAGE,
                                                           round_key(round_index)) if e.accepted]
    if run_config(ref).modular_rsi.mode == "modular":
        accepted = [ModuleEdit(e.module, e.base_ver, harness_document(ref, e.candidate_id), e.diff, e.edit_key,
                               e.operator, e.rationale) for e in edits]
        merged, conflicts = integrate(base, accepted)
        vers = {m: next((e.id for e in edits if e.module == m), "base") for m in MODULES}
    else:
        merged = harness_document(ref, edits[-1].candidate_id) if edits else base
        conflicts, vers = [], {"whole": [e.id for e in edits]}
    candidate = publish(ref, round_index, merged, "integrate", [base_of(ref, round_index)],
                        f"round {round_index} integration: {len(edits)} accepted edits, {len(conflicts)} conflicts")
    return MRSIIntegrationRow(run_id=ref.run_id, round=round_index, harness_ver=version(merged),
                              candidate_id=candidate, module_vers=json.dumps(vers, sort_keys=True),
                              conflicts=conflicts)


@task(name="integrate", **STAGE_OPTIONS)
def integrate_round(ref: RunRef, round_index: int) -> str:
    """register (per round): the accepted module versions merged into the next base."""
    return once(ref, "mrsi_integrations", "integrate", round_key(round_index),
                lambda: [integration_row(ref, round_index)])[0].candidate_id


def select_of(ref: RunRef, candidate: str) -> dict[str, float]:
    cases = cases_by_split(run_suite(ref), "select")
    run_missing(ref, f"select-{candidate[:12]}", candidate, cases)
    return {c: float(t.success) for c, t in traces(ref, candidate, cases).items()}


def champion_decision(ref: RunRef, last: int) -> GateDecisionRow:
    seed, final = base_of(ref, 1), base_of(ref, last + 1)
    after, before = select_of(ref, final), select_of(ref, seed)
    cases, diffs = paired_differences(after, before)
    low, high = paired_bootstrap_ci(diffs, seed=seed_for(run_config(ref).seed, "mrsi_champion", final))
    delta = fmean(diffs) if diffs else 0.0
    kept = final if delta >= 0 else seed
    integration = store_for(ref.store_uri).read_part("mrsi_integrations", ref.run_id, "integrate", round_key(last))
    evidence = {"final": final, "seed": seed, "rounds": last, "module_vers": json.loads(integration[0].module_vers),
                "conflicts": integration[0].conflicts, "champion": kept}
    reason = (f"accept: the round-{last} integration is no worse than the seed on select "
              f"({fmean(after.values()):.3f} vs {fmean(before.values()):.3f})" if kept == final else
              f"reject: the round-{last} integration is worse on select (delta {delta:.3f}); the seed stays champion")
    outcome = GateOutcome(
        decision="accept" if kept == final else "reject", reason=reason,
        improved_cases=[c for c, d in zip(cases, diffs) if d > 0],
        regressed_cases=[c for c, d in zip(cases, diffs) if d < 0], select_score=fmean(after.values()),
        baseline_score=fmean(before.values()), delta=delta, ci_low=low, ci_high=high, n_cases=len(cases),
        evidence_json=dump_evidence(evidence))
    return gate_rows.decision_row(ref, last, kept, CHAMPION_GATE, seed, outcome, id_parts=(final, CHAMPION_GATE))


@task(name="register_champion", **STAGE_OPTIONS)
def register_champion(ref: RunRef, last: int) -> str:
    """register: the frozen harness (the last integration, or the seed) by its content id."""
    store, key = store_for(ref.store_uri), round_key(last)
    remember_decision_part(ref, "champion", key)
    decision = once(ref, "gate_decisions", "champion", key, lambda: [champion_decision(ref, last)])[0]
    name = registry_name(run_config(ref))

    def rows():
        earlier = [r for r in store.read_rows("registry", ref.run_id) if r.name == name]
        return [RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1,
                            candidate_id=decision.candidate_id, stage="stable", alias=CHAMPION,
                            decision_id=decision.decision_id, select_score=decision.select_score,
                            holdout_score=holdout_score(ref, decision.candidate_id),
                            event_at=datetime.now(timezone.utc))]

    registered = once(ref, "registry", "register", key, rows)
    track_candidate(ref, decision, registered[0])
    return decision.candidate_id


register_champion.on_rollback(undo_decision_part)


def eval_rows(ref: RunRef, last: int) -> list[MRSIEvalRow]:
    cases, pool = cases_by_split(run_suite(ref), "test"), set(pool_templates(ref))
    rows = []
    for role, candidate in (("seed", base_of(ref, 1)), ("final", base_of(ref, last + 1))):
        run_missing(ref, f"eval-{candidate[:12]}", candidate, cases)
        for case_id, trace in traces(ref, candidate, cases).items():
            template = case_index(ref)[case_id].payload["template"]
            rows.append(MRSIEvalRow(run_id=ref.run_id, harness_ver=candidate, role=role, model="toolsim-procedural",
                                    benchmark="in_domain" if template in pool else "held_out", task_id=case_id,
                                    passed=trace.success))
    return rows


@task(name="final_eval", **STAGE_OPTIONS)
def final_eval(ref: RunRef, last: int) -> None:
    """The frozen harness and the seed on the benchmark (test split), reporting only."""
    once(ref, "mrsi_evals", STAGE, f"eval-{round_key(last)}", lambda: eval_rows(ref, last))


@task(name="summarize")
def mrsi_summary(ref: RunRef, last: int) -> dict[str, object]:
    store = store_for(ref.store_uri)
    evals = store.read_rows("mrsi_evals", ref.run_id)
    edits = store.read_rows("mrsi_module_edits", ref.run_id)
    registered = store.read_part("registry", ref.run_id, "register", round_key(last))[0]

    def rate(role: str, benchmark: str) -> float | None:
        values = [r.passed for r in evals if r.role == role and r.benchmark == benchmark]
        return fmean(values) if values else None

    return {
        "run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success", "rounds": last,
        "mode": run_config(ref).modular_rsi.mode, "candidate_id": registered.candidate_id,
        "select_score": registered.select_score, "holdout_score": registered.holdout_score,
        "edits": len(edits), "accepted": sum(e.accepted for e in edits),
        "seed_held_out": rate("seed", "held_out"), "final_held_out": rate("final", "held_out"),
        "seed_in_domain": rate("seed", "in_domain"), "final_in_domain": rate("final", "in_domain"),
    }
