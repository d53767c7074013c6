"""arenaflow's gate and register: one ``gate_decisions`` row (gate ``af_skill``) per
skill a round admitted (merged from a champion's key steps, or revived) or pruned
(utility still negative after ``min_obs`` observations), with its utility, observations
and the rule as evidence; at the end, the final checkpoint (policy + active library)
against the untrained one, paired over the select cases with a bootstrap CI (gate
``af_policy``): registered as the champion when it is not worse on the mean. Held-out
cases are run only for the registered checkpoint; the test split only for the summary."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.ids import seed_for
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.loops.arenaflow.loop import evaluate
from tasks.loops.arenaflow.stages import STAGE, checkpoint, policy_at, round_key, settings
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name

SKILL_GATE, POLICY_GATE = "af_skill", "af_policy"


def skill_decisions(ref: RunRef, r: int) -> list[GateDecisionRow]:
    min_obs = run_config(ref).arenaflow.min_obs
    rows = store_for(ref.store_uri).read_part("af_skills", ref.run_id, STAGE, round_key(r))
    _, before = policy_at(ref, r - 1)
    out = []
    for s in rows:
        was = before.get(s.skill_id)
        if s.active and (was is None or not was.active):
            decision, reason = "accept", (f"accept: merged from a champion's key steps ({s.template}, {s.option})"
                                          if was is None else f"accept: revived as version {s.ver}")
        elif not s.active and was is not None and was.active:
            decision, reason = "reject", f"reject: utility {s.utility:.3f} < 0 after {s.n_obs} >= {min_obs} observations"
        else:
            continue
        evidence = {"skill_id": s.skill_id, "ver": s.ver, "template": s.template, "option": s.option,
                    "utility": s.utility, "n_obs": s.n_obs, "min_obs": min_obs, "was_active": bool(was and was.active)}
        out.append(decision_row(ref, r, s.skill_id, SKILL_GATE, None, GateOutcome(
            decision=decision, reason=reason, improved_cases=[], regressed_cases=[], select_score=s.utility,
            baseline_score=was.utility if was else None, delta=None, ci_low=None, ci_high=None, n_cases=s.n_obs,
            evidence_json=dump_evidence(evidence))))
    return out


@task(name="gate_skills", **STAGE_OPTIONS)
def gate_skills(ref: RunRef, r: int) -> int:
    """gate: the round's library admissions and prunings, each with its evidence."""
    remember_decision_part(ref, SKILL_GATE, round_key(r))
    return len(once(ref, "gate_decisions", SKILL_GATE, round_key(r), lambda: skill_decisions(ref, r)))


gate_skills.on_rollback(undo_decision_part)


def success_on(ref: RunRef, r: int, split: str) -> dict[str, float]:
    policy, library = policy_at(ref, r)
    return evaluate(policy, library, cases_by_split(run_suite(ref), split), settings(ref))


def policy_decision(ref: RunRef, last: int) -> GateDecisionRow:
    after, before = success_on(ref, last, "select"), success_on(ref, 0, "select")
    cases, diffs = paired_differences(after, before)
    low, high = paired_bootstrap_ci(diffs, seed=seed_for(run_config(ref).seed, POLICY_GATE))
    delta = fmean(diffs)
    accept = delta >= 0
    reason = (f"{'accept' if accept else 'reject'}: select success {fmean(after.values()):.3f} vs untrained "
              f"{fmean(before.values()):.3f} (delta {delta:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}])")
    evidence = {"rounds": last, "library_active": sum(s.active for s in policy_at(ref, last)[1].values())}
    return decision_row(ref, last, checkpoint(ref, last).candidate_id, POLICY_GATE, checkpoint(ref, 0).candidate_id,
                        GateOutcome(decision="accept" if accept else "reject", reason=reason,
                                    improved_cases=[c for c, d in zip(cases, diffs) if d > 0],
                                    regressed_cases=[c for c, d in zip(cases, diffs) if d < 0],
                                    select_score=fmean(after.values()), baseline_score=fmean(before.values()),
                                    delta=delta, ci_low=low, ci_high=high, n_cases=len(cases),
                                    evidence_json=dump_evidence(evidence)))


@task(name="register_policy", **STAGE_OPTIONS)
def register_policy(ref: RunRef, last: int) -> str | None:
    """gate + register: the final checkpoint as the champion (its content id) when it is
    not worse than the untrained policy on select; holdout measured once registered."""
    remember_decision_part(ref, POLICY_GATE, round_key(last))
    decision = once(ref, "gate_decisions", POLICY_GATE, round_key(last), lambda: [policy_decision(ref, last)])[0]
    if decision.decision != "accept":
        return None
    name = registry_name(run_config(ref))

    def rows():
        earlier = [r for r in store_for(ref.store_uri).read_rows("registry", ref.run_id) if r.name == name]
        return [RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1,
                            candidate_id=decision.candidate_id, stage="stable", alias=CHAMPION,
                            decision_id=decision.decision_id, select_score=decision.select_score,
                            holdout_score=fmean(success_on(ref, last, "holdout").values()),
                            event_at=datetime.now(timezone.utc))]

    return once(ref, "registry", "register", round_key(last), rows)[0].candidate_id


register_policy.on_rollback(undo_decision_part)


@task(name="summarize")
def arenaflow_summary(ref: RunRef, last: int) -> dict[str, object]:
    store = store_for(ref.store_uri)
    registered = store.read_part("registry", ref.run_id, "register", round_key(last)) if store.has_part(
        "registry", ref.run_id, "register", round_key(last)) else []
    _, library = policy_at(ref, last)
    return {"run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success", "rounds": last,
            "candidate_id": checkpoint(ref, last).candidate_id, "registered": bool(registered),
            "holdout_score": registered[0].holdout_score if registered else None,
            "untrained_test_success": fmean(success_on(ref, 0, "test").values()),
            "test_success": fmean(success_on(ref, last, "test").values()),
            "skills": len(library), "active_skills": sum(s.active for s in library.values())}
