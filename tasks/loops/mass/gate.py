"""mass's gates, register and evaluation.

Inner gate (``mass_workflow``, one decision per generation): the child with the most
net pairwise wins over its parent on the train cases replaces it when not worse; the
decision is recomputed from that generation's ``mass_pairwise`` and
``mass_executions`` rows, and its evidence holds every child's (wins, losses, ties) and
the kept spec, so ``SELECT evidence_json FROM gate_decisions WHERE gate='mass_workflow'``
explains it. Outer gate (``mass_policy``): the distilled policy against the evolved
workflow, paired over the select cases with a bootstrap CI; registered as the champion
(its content id) when not worse on the mean. Held-out and test cases are run only after
the gate, into ``mass_evals``: the seed and evolved workflows, the old and new
policies, and the optimizer check (the evolved workflow run by the old policy)."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.ids import seed_for
from schemas.mass import MassEvalRow
from schemas.rows import GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.stats import paired_bootstrap_ci, paired_differences
from tasks.loops.mass.loop import Execution, choose, run_policy, run_workflow, tally
from tasks.loops.mass.stages import STAGE, WF_GATE, gen_key, policy_of, workflow_after
from tasks.loops.mass.workflow import from_spec
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import CHAMPION, registry_name

POLICY_GATE = "mass_policy"


def workflow_decision(ref: RunRef, g: int) -> GateDecisionRow:
    store, key = store_for(ref.store_uri), gen_key(g)
    parent = workflow_after(ref, g - 1)
    kids = [from_spec(w.spec_json) for w in store.read_part("mass_workflows", ref.run_id, STAGE, key)]
    runs: dict[str, list[Execution]] = {}
    for e in store.read_part("mass_executions", ref.run_id, STAGE, key):
        runs.setdefault(e.wf_id, []).append(Execution(e.task_id, "", e.success, e.out_tokens, e.delegation_calls, ()))
    tallies = {k.wf_id: tally(runs[k.wf_id], runs[parent.wf_id]) for k in kids}
    kept = choose(parent, kids, tallies)
    best = max(kids, key=lambda k: tallies[k.wf_id][0] - tallies[k.wf_id][1])
    wins, losses, ties = tallies[best.wf_id]
    n = wins + losses + ties
    accept = kept != parent
    rate = {wf: fmean(e.success for e in rs) for wf, rs in runs.items()}
    reason = (f"{'accept' if accept else 'reject'}: best child {best.wf_id[:12]} won {wins}, lost {losses}, tied "
              f"{ties} of {n} train cases against its parent (net {wins - losses:+d}; kept when >= 0)")
    evidence = {"parent_spec": parent.spec_json(), "kept_spec": kept.spec_json(), "best_spec": best.spec_json(),
                "children": {k.wf_id: {"spec": k.spec_json(), "wins": tallies[k.wf_id][0],
                                       "losses": tallies[k.wf_id][1], "ties": tallies[k.wf_id][2]} for k in kids}}
    theirs = {e.case_id: e for e in runs[parent.wf_id]}
    improved = sorted(e.case_id for e in runs[best.wf_id] if (e.success, -e.calls) > (
        theirs[e.case_id].success, -theirs[e.case_id].calls))
    regressed = sorted(e.case_id for e in runs[best.wf_id] if (e.success, -e.calls) < (
        theirs[e.case_id].success, -theirs[e.case_id].calls))
    return decision_row(ref, g, best.wf_id, WF_GATE, parent.wf_id, GateOutcome(
        decision="accept" if accept else "reject", reason=reason, improved_cases=improved, regressed_cases=regressed,
        select_score=rate[best.wf_id], baseline_score=rate[parent.wf_id], delta=(wins - losses) / n, ci_low=None,
        ci_high=None, n_cases=n, evidence_json=dump_evidence(evidence)), id_parts=(best.wf_id, WF_GATE, key))


@task(name="gate_workflow", **STAGE_OPTIONS)
def gate_workflow(ref: RunRef, g: int) -> str:
    """gate (inner): keep the better-judged workflow; returns the kept workflow's id."""
    remember_decision_part(ref, WF_GATE, gen_key(g))
    once(ref, "gate_decisions", WF_GATE, gen_key(g), lambda: [workflow_decision(ref, g)])
    return workflow_after(ref, g).wf_id


gate_workflow.on_rollback(undo_decision_part)


def success(runs: list[Execution]) -> dict[str, float]:
    return {e.case_id: float(e.success) for e in runs}


def policy_decision(ref: RunRef, last: int) -> GateDecisionRow:
    cases = cases_by_split(run_suite(ref), "select")
    row, policy = policy_of(ref, "p1")
    wf = workflow_after(ref, last)
    after, before = success(run_policy(policy, cases)), success(run_workflow(wf, cases))
    ids, diffs = paired_differences(after, before)
    low, high = paired_bootstrap_ci(diffs, seed=seed_for(run_config(ref).seed, POLICY_GATE))
    delta = fmean(diffs)
    accept = delta >= 0
    reason = (f"{'accept' if accept else 'reject'}: distilled policy select success {fmean(after.values()):.3f} vs "
              f"the evolved workflow {fmean(before.values()):.3f} (delta {delta:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}])")
    evidence = {"workflow_spec": wf.spec_json(), "generations": last,
                "sft_examples": len(store_for(ref.store_uri).read_part("mass_sft_examples", ref.run_id, STAGE, "distill"))}
    outcome = GateOutcome(
        decision="accept" if accept else "reject", reason=reason,
        improved_cases=[c for c, d in zip(ids, diffs) if d > 0], regressed_cases=[c for c, d in zip(ids, diffs) if d < 0],
        select_score=fmean(after.values()), baseline_score=fmean(before.values()), delta=delta, ci_low=low,
        ci_high=high, n_cases=len(ids), evidence_json=dump_evidence(evidence))
    return decision_row(ref, last, row.candidate_id, POLICY_GATE, wf.wf_id, outcome,
                        id_parts=(row.candidate_id, POLICY_GATE, "policy"))


@task(name="register_policy", **STAGE_OPTIONS)
def register_policy(ref: RunRef, last: int) -> str | None:
    """gate + register: the distilled policy as the champion when not worse than the workflow on select."""
    remember_decision_part(ref, POLICY_GATE, "policy")
    decision = once(ref, "gate_decisions", POLICY_GATE, "policy", lambda: [policy_decision(ref, last)])[0]
    if decision.decision != "accept":
        return None
    name = registry_name(run_config(ref))

    def rows():
        earlier = [r for r in store_for(ref.store_uri).read_rows("registry", ref.run_id) if r.name == name]
        holdout = success(run_policy(policy_of(ref, "p1")[1], cases_by_split(run_suite(ref), "holdout")))
        return [RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1, candidate_id=decision.candidate_id,
                            stage="stable", alias=CHAMPION, decision_id=decision.decision_id,
                            select_score=decision.select_score, holdout_score=fmean(holdout.values()),
                            event_at=datetime.now(timezone.utc))]

    return once(ref, "registry", "register", "policy", rows)[0].candidate_id


register_policy.on_rollback(undo_decision_part)

MODELS = ("workflow-seed", "workflow-evolved", "policy-old", "policy-distilled", "policy-old+workflow-evolved")


def model_runs(ref: RunRef, last: int, cases: list) -> dict[str, list[Execution]]:
    old, new, wf = policy_of(ref, "p0")[1], policy_of(ref, "p1")[1], workflow_after(ref, last)
    return {"workflow-seed": run_workflow(workflow_after(ref, 0), cases), "workflow-evolved": run_workflow(wf, cases),
            "policy-old": run_policy(old, cases), "policy-distilled": run_policy(new, cases),
            "policy-old+workflow-evolved": run_policy(old, cases, wf)}


@task(name="evaluate", **STAGE_OPTIONS)
def evaluate(ref: RunRef, last: int) -> int:
    """report: every model on the holdout and test cases (after the gates)."""
    def rows():
        out = []
        for bench in ("holdout", "test"):
            for model, runs in model_runs(ref, last, cases_by_split(run_suite(ref), bench)).items():
                out += [MassEvalRow(run_id=ref.run_id, model_gen=model, bench=bench, task_id=e.case_id, trial=0,
                                    score=float(e.success), out_tokens=e.calls, delivered=True, scorable=True)
                        for e in runs]
        return out
    return len(once(ref, "mass_evals", STAGE, "eval", rows))


@task(name="summarize")
def mass_summary(ref: RunRef, last: int) -> dict[str, object]:
    store = store_for(ref.store_uri)
    evals = store.read_part("mass_evals", ref.run_id, STAGE, "eval")
    registered = store.read_part("registry", ref.run_id, "register", "policy") if store.has_part(
        "registry", ref.run_id, "register", "policy") else []
    held = {m: [e for e in evals if e.model_gen == m and e.bench == "holdout"] for m in MODELS}
    return {"run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success", "generations": last,
            "workflow": workflow_after(ref, last).spec_json(), "candidate_id": policy_of(ref, "p1")[0].candidate_id,
            "registered": bool(registered), "holdout_score": registered[0].holdout_score if registered else None,
            **{f"holdout_{m}": fmean(e.score for e in rows) for m, rows in held.items()},
            **{f"calls_{m}": fmean(e.out_tokens for e in rows) for m, rows in held.items()},
            "sft_examples": len(store.read_part("mass_sft_examples", ref.run_id, STAGE, "distill"))}
