"""Stage tasks of the graphskillevo loop, second half: the gate of each generation
(validity first, then the validation split; keep the top ``population`` of old ∪ new),
the final registration of the best skill on validation, the test report and the
summary.

Every offspring gets one ``gate_decisions`` row (gate ``gse_select``): accept when it
entered the population, reject otherwise, its validation success as ``select_score``
against its first parent's (paired over the select cases: delta, bootstrap CI,
improved and regressed cases), and the evidence of why (invalid reason, rank, the
population's cutoff, the population before and after). The champion's row (gate
``gse_champion``) compares the best skill on validation with the seed. Held-out cases
are run only for the registered champion; the test split only for the final report."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.graphskillevo import GSEPopulationRow, GSETestRow, GSEValScoreRow
from schemas.ids import seed_for
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stage import CHAMPION, registry_name
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.harness_loops.episodes import case_index, episode_of, run_missing
from tasks.harness_loops.tracking import track_candidate
from tasks.loops.graphskillevo.operators import select
from tasks.loops.graphskillevo.stages import STAGE, gen_key, population, skills, successes
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score

SELECT_GATE, CHAMPION_GATE = "gse_select", "gse_champion"


def val_cases(ref: RunRef) -> list[str]:
    return [c.case_id for c in cases_by_split(run_suite(ref), "select")]


def val_of(ref: RunRef, skill: str) -> dict[str, float]:
    """The skill's per-case validation success (running it where it has not run)."""
    candidate = skills(ref)[skill].candidate_id
    run_missing(ref, f"val-{candidate[:12]}", candidate, [case_index(ref)[c] for c in val_cases(ref)])
    return successes(ref, candidate, val_cases(ref))


def val_rows(ref: RunRef, gen: int, new: list[str]) -> list[GSEValScoreRow]:
    held = skills(ref)
    rows = []
    for skill in new:
        if held[skill].valid:
            got = val_of(ref, skill)
            rows.append(GSEValScoreRow(run_id=ref.run_id, skill_id=skill, gen=gen, val_success=fmean(got.values()),
                                       n_cases=len(got)))
    return rows


def val_scores(ref: RunRef) -> dict[str, float]:
    return {r.skill_id: r.val_success for r in store_for(ref.store_uri).read_rows("gse_val_scores", ref.run_id)}


def population_rows(ref: RunRef, gen: int, new: list[str]) -> list[GSEPopulationRow]:
    """The top ``population`` of old ∪ new valid skills by validation success."""
    scores, held = val_scores(ref), skills(ref)
    old = population(ref, gen - 1) if gen > 0 else []
    pool = [(s, scores[s], held[s].gen) for s in [*old, *new] if s in scores]
    kept = select(pool, run_config(ref).graphskillevo.population)
    return [GSEPopulationRow(run_id=ref.run_id, gen=gen, skill_id=s, rank=i + 1, val_success=scores[s])
            for i, s in enumerate(kept)]


def _paired(ref: RunRef, skill: str, baseline: str | None) -> dict:
    """Paired select evidence of ``skill`` against ``baseline`` (delta, CI, cases)."""
    if baseline is None or skill not in val_scores(ref):
        return {"improved_cases": [], "regressed_cases": [], "baseline_score": None, "delta": None,
                "ci_low": None, "ci_high": None, "n_cases": 0}
    after, before = val_of(ref, skill), val_of(ref, baseline)
    cases, diffs = paired_differences(after, before)
    low, high = paired_bootstrap_ci(diffs, seed=seed_for(run_config(ref).seed, "gate", skill))
    return {"improved_cases": [c for c, d in zip(cases, diffs) if d > 0],
            "regressed_cases": [c for c, d in zip(cases, diffs) if d < 0], "baseline_score": fmean(before.values()),
            "delta": fmean(diffs), "ci_low": low, "ci_high": high, "n_cases": len(cases)}


def decision_rows(ref: RunRef, gen: int, new: list[str]) -> list[GateDecisionRow]:
    if gen == 0:
        return []  # the seed is the population; nothing is admitted against it
    held, scores = skills(ref), val_scores(ref)
    before, after = population(ref, gen - 1), population(ref, gen)
    cutoff = min((scores[s] for s in after), default=None)
    rows = []
    for skill in new:
        row, kept = held[skill], skill in after
        parent = row.parents[0] if row.parents else None
        if not row.valid:
            reason = f"reject: invalid offspring, never run: {row.reason}"
        elif kept:
            reason = f"accept: val {scores[skill]:.3f}, rank {after.index(skill) + 1} of {len(after)}"
        else:
            reason = (f"reject: not in the top {len(after)}: val {scores[skill]:.3f}, cutoff {cutoff:.3f} "
                      "(ties go to the older skill)")
        evidence = {"skill_id": skill, "op": row.op, "parents": row.parents, "valid": row.valid,
                    "invalid_reason": row.reason, "val_success": scores.get(skill), "cutoff": cutoff,
                    "rank": after.index(skill) + 1 if kept else None, "population_before": before,
                    "population_after": after}
        paired = _paired(ref, skill, parent)
        outcome = GateOutcome(decision="accept" if kept else "reject", reason=reason, select_score=scores.get(skill),
                              evidence_json=dump_evidence(evidence), **paired)
        rows.append(decision_row(ref, gen, row.candidate_id or skill, SELECT_GATE,
                                 held[parent].candidate_id if parent else None, outcome, id_parts=(skill, SELECT_GATE)))
    return rows


@task(name="gate_generation", **STAGE_OPTIONS)
def gate_generation(ref: RunRef, gen: int, new: list[str]) -> list[str]:
    """gate: valid offspring are scored on the validation split once; the top
    ``population`` of old ∪ new survive; one decision per offspring. Returns the
    population after generation ``gen``."""
    key = gen_key(gen)
    once(ref, "gse_val_scores", "gate", key, lambda: val_rows(ref, gen, new))
    once(ref, "gse_population", "gate", key, lambda: population_rows(ref, gen, new))
    remember_decision_part(ref, "gate", key)
    decisions = once(ref, "gate_decisions", "gate", key, lambda: decision_rows(ref, gen, new))
    track_offspring(ref, decisions)
    members = population(ref, gen)
    reporter().advance(0, f"generation {gen}: best val {val_scores(ref)[members[0]]:.3f}")
    return members


gate_generation.on_rollback(undo_decision_part)


def track_offspring(ref: RunRef, decisions: list[GateDecisionRow]) -> None:
    """Each valid offspring's candidate as a nested MLflow run with its decision (an
    invalid one has no candidate: its record is the gse_skills row)."""
    known = {c.candidate_id for c in store_for(ref.store_uri).read_rows("candidates", ref.run_id)}
    tracked = set()
    for decision in decisions:
        if decision.candidate_id in known and decision.candidate_id not in tracked:
            tracked.add(decision.candidate_id)
            track_candidate(ref, decision, None)


def champion_decision(ref: RunRef, last: int) -> GateDecisionRow:
    """The best skill on validation after the last generation, against the seed."""
    best, held = population(ref, last)[0], skills(ref)
    seed = next(s for s, r in held.items() if r.gen == 0)
    paired = _paired(ref, best, seed) if best != seed else _paired(ref, best, None)
    scores = val_scores(ref)
    evidence = {"skill_id": best, "seed_skill_id": seed, "generations": last, "val_success": scores[best],
                "seed_val_success": scores[seed], "op": held[best].op, "population": population(ref, last)}
    outcome = GateOutcome(decision="accept", select_score=scores[best], evidence_json=dump_evidence(evidence),
                          reason=f"accept: best skill on validation after {last} generations "
                                 f"({scores[best]:.3f} vs the seed's {scores[seed]:.3f})", **paired)
    return decision_row(ref, last, held[best].candidate_id, CHAMPION_GATE, held[seed].candidate_id, outcome,
                        id_parts=(best, CHAMPION_GATE))


@task(name="choose_champion", **STAGE_OPTIONS)
def choose_champion(ref: RunRef, last: int) -> str:
    remember_decision_part(ref, "champion", gen_key(last))
    return once(ref, "gate_decisions", "champion", gen_key(last), lambda: [champion_decision(ref, last)])[0].candidate_id


choose_champion.on_rollback(undo_decision_part)


@task(name="register_champion", **STAGE_OPTIONS)
def register_champion(ref: RunRef, last: int) -> str:
    """register: the best skill's harness as the champion (its content id), holdout measured."""
    store = store_for(ref.store_uri)
    decision = store.read_part("gate_decisions", ref.run_id, "champion", gen_key(last))[0]
    name = registry_name(run_config(ref))

    def rows():
        earlier = [r for r in store.read_rows("registry", ref.run_id) if r.name == name]
        return [RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1,
                            candidate_id=decision.candidate_id, stage="stable", alias=CHAMPION,
                            decision_id=decision.decision_id, select_score=decision.select_score,
                            holdout_score=holdout_score(ref, decision.candidate_id),
                            event_at=datetime.now(timezone.utc))]

    registered = once(ref, "registry", "register", gen_key(last), rows)
    track_candidate(ref, decision, registered[0])
    return decision.candidate_id


def test_rows(ref: RunRef, last: int) -> list[GSETestRow]:
    held, cases = skills(ref), cases_by_split(run_suite(ref), "test")
    best = population(ref, last)[0]
    seed = next(s for s, r in held.items() if r.gen == 0)
    rows = []
    for role, skill in (("seed", seed), ("champion", best)):
        candidate = held[skill].candidate_id
        run_missing(ref, f"test-{candidate[:12]}", candidate, cases)
        runs = {e.case_id: e for e in store_for(ref.store_uri).read_rows("executions", ref.run_id)
                if e.candidate_id == candidate}
        got = successes(ref, candidate, [c.case_id for c in cases])
        for case in cases:
            run = runs[case.case_id]
            calls = episode_of(ref, case.case_id, run.output_uri).tool_calls if run.output_uri else 0
            rows.append(GSETestRow(run_id=ref.run_id, skill_id=skill, bench=run_suite(ref).name, task_id=case.case_id,
                                   success=got.get(case.case_id, 0.0) >= 1.0, tokens=calls, role=role))
    return rows


@task(name="final_test", **STAGE_OPTIONS)
def final_test(ref: RunRef, last: int) -> None:
    """The seed and the champion on the test split (reporting only)."""
    once(ref, "gse_test", STAGE, gen_key(last), lambda: test_rows(ref, last))


@task(name="summarize")
def gse_summary(ref: RunRef, last: int) -> dict[str, object]:
    store, held = store_for(ref.store_uri), skills(ref)
    test = store.read_rows("gse_test", ref.run_id)
    registered = store.read_part("registry", ref.run_id, "register", gen_key(last))[0]

    def rate(role: str) -> float | None:
        values = [r.success for r in test if r.role == role]
        return fmean(values) if values else None

    return {
        "run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success", "generations": last,
        "candidate_id": registered.candidate_id, "skill_id": population(ref, last)[0],
        "val_success": registered.select_score, "holdout_score": registered.holdout_score,
        "seed_test_success": rate("seed"), "test_success": rate("champion"),
        "skills": len(held), "invalid": sum(not r.valid for r in held.values()),
    }
