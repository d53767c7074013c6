"""distill (the cost audit) and gate (the paired comparison) of the protocol, and the
run's summary. Decisions record whether a CI shows a difference: ``accept`` when the 95%
CI of b − a excludes 0 (of the cost ratio: excludes 1), ``reject`` when it does not,
which is not evidence of equivalence."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

from prefect import task

from schemas.ids import derived_id
from schemas.rows import DistillateRow, GateDecisionRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.gate.rows import decision_row
from tasks.loops.harness_or_model.arms import Arm
from tasks.loops.harness_or_model.coding import codemidas_tasks, groups_of
from tasks.loops.harness_or_model.evidence import (CostAudit, Difference, Run, cost_audit, group_permutation_p,
                                                   paired_difference, task_means)
from tasks.loops.harness_or_model.stages import METRICS, arms_of, protocol_of, recorded_runs
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS


def _prices(ref: RunRef) -> dict[str, float]:
    section = protocol_of(ref).harness_or_model
    return {"in": section.price_in, "cached": section.price_cached, "out": section.price_out}


def audit_of(ref: RunRef, runs: list[Run]) -> CostAudit:
    a, b = arms_of(ref)
    config = protocol_of(ref)
    return cost_audit(runs, a.name, b.name, {a.name: a.cache_included, b.name: b.cache_included}, _prices(ref),
                      config.harness_or_model.resamples, config.seed)


@task(name="distill", **STAGE_OPTIONS)
def audit(ref: RunRef, ids: dict[str, str]) -> None:
    """distill: the cost audit, one distillate whose sources are the runs without usage."""
    runs = recorded_runs(ref, ids, protocol_of(ref).budget)

    def rows() -> list[DistillateRow]:
        found = audit_of(ref, runs)
        missing = sorted(r.execution_id for r in runs if r.usage is None)
        return [DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "cost_audit"), round=0,
                              kind="cost_audit", content=json.dumps(json_safe(asdict(found)), sort_keys=True),
                              uri=None, source_execution_ids=missing, support=len(runs), status="active")]

    once(ref, "distillates", "distill", "cost-audit", rows)


@task(name="gate", **STAGE_OPTIONS)
def compare(ref: RunRef, ids: dict[str, str]) -> list[GateDecisionRow]:
    """gate: per-task paired b − a of every count and of cost per solved task, each with
    a task-bootstrap 95% CI, and the pre-registered subgroup permutation test."""
    return once(ref, "gate_decisions", "gate", "protocol", lambda: _decisions(ref, ids))


def _decisions(ref: RunRef, ids: dict[str, str]) -> list[GateDecisionRow]:
    config = protocol_of(ref)
    a, b = arms_of(ref)
    runs, section = recorded_runs(ref, ids, config.budget), config.harness_or_model
    rows = []
    for metric in METRICS:
        found = paired_difference(runs, a.name, b.name, metric, section.resamples, config.seed)
        rows.append(_row(ref, ids, (a, b), f"paired:{metric}", found.delta, found.ci, found.n_tasks,
                         found.shown, _difference_reason(found, a, b), _counts(runs, metric) | asdict(found)))
    costs = audit_of(ref, runs)
    shown = not (costs.ratio_ci[0] <= 1.0 <= costs.ratio_ci[1])
    reason = (f"cost per solved task {b.name}/{a.name} = {costs.ratio:.2f}, 95% CI [{costs.ratio_ci[0]:.2f}, "
              f"{costs.ratio_ci[1]:.2f}]; the runs without usage ({_missing_text(costs.missing)}) put it anywhere in "
              f"[{costs.ratio_bounds[0]:.2f}, {costs.ratio_bounds[1]:.2f}]")
    rows.append(_row(ref, ids, (a, b), "cost_per_solved", costs.ratio, costs.ratio_ci, len({r.task for r in runs}),
                     shown, reason, asdict(costs)))
    rows.append(_subgroup_row(ref, ids, (a, b), runs))
    return rows


def _missing_text(missing: dict[str, int]) -> str:
    return ", ".join(f"{n} of {arm}" for arm, n in sorted(missing.items()))


def _subgroup_row(ref: RunRef, ids: dict[str, str], arms: tuple[Arm, Arm], runs: list[Run]) -> GateDecisionRow:
    config = protocol_of(ref)
    a, b = arms
    means_a, means_b = task_means(runs, a.name, "success"), task_means(runs, b.name, "success")
    diffs = {t: means_b[t] - means_a[t] for t in means_a}
    groups = pre_registered_groups(ref)
    group_of_member = {t: g for g, members in groups.items() for t in members}
    group_of = {t: group_of_member[t if config.suite == "codemidas" else t.split("/", 1)[0]] for t in diffs}
    first, second = sorted(groups)
    per_group = {g: sum(d for t, d in diffs.items() if group_of[t] == g) / max(1, sum(group_of[t] == g for t in diffs))
                 for g in groups}
    if len(set(group_of.values())) < 2:
        observed, p = math.nan, math.nan
        reason = f"pre-registered groups: every task is in {next(iter(set(group_of.values())))}, no subgroup test"
    else:
        observed, p = group_permutation_p(diffs, group_of, config.harness_or_model.resamples, config.seed)
        reason = (f"pre-registered groups: solved {b.name} − {a.name} is {per_group[first]:+.3f} on {first} and "
                  f"{per_group[second]:+.3f} on {second}; {first} minus {second} {observed:+.3f}, label-permutation "
                  f"p = {p:.4f} ({config.harness_or_model.resamples} permutations)")
    return _row(ref, ids, arms, "subgroup:success", observed, (math.nan, math.nan), len(diffs), bool(p < 0.05), reason,
                {"groups": groups, "per_group": per_group, "p": p})


def pre_registered_groups(ref: RunRef) -> dict[str, list[str]]:
    """group -> members: toolsim templates from the config; on codemidas the tasks with and
    without a docstring (`coding.groups_of`, fixed by the specs before any run)."""
    config = protocol_of(ref)
    if config.suite == "codemidas":
        return groups_of(codemidas_tasks(ref))
    return config.harness_or_model.groups


def _counts(runs: list[Run], metric: str) -> dict[str, object]:
    """Run counts behind a metric, per arm; for hit_limit also how many of those solved."""
    arms = sorted({r.arm for r in runs})
    counts: dict[str, object] = {"runs": {arm: sum(r.arm == arm for r in runs) for arm in arms},
                                 metric: {arm: sum(r.metrics[metric] for r in runs if r.arm == arm) for arm in arms}}
    if metric == "hit_limit":
        counts["hit_limit_and_solved"] = {arm: sum(r.metrics["hit_limit"] * r.metrics["success"] for r in runs
                                                   if r.arm == arm) for arm in arms}
    return counts


def _difference_reason(found: Difference, a: Arm, b: Arm) -> str:
    verdict = "shows a difference" if found.shown else "includes 0: no difference shown (not equivalence)"
    return (f"{found.metric} {b.name} − {a.name} = {found.delta:+.4f} over {found.n_tasks} tasks "
            f"({a.name} {found.mean_a:.4f}, {b.name} {found.mean_b:.4f}), 95% CI [{found.ci[0]:+.4f}, "
            f"{found.ci[1]:+.4f}]: {verdict}")


def _row(ref: RunRef, ids: dict[str, str], arms: tuple[Arm, Arm], gate: str, delta: float,
         ci: tuple[float, float], n: int, shown: bool, reason: str, evidence: dict) -> GateDecisionRow:
    a, b = arms
    outcome = GateOutcome(
        decision="accept" if shown else "reject", reason=reason, improved_cases=[], regressed_cases=[],
        select_score=None, baseline_score=None, delta=json_safe(delta), ci_low=json_safe(ci[0]),
        ci_high=json_safe(ci[1]), n_cases=n,
        evidence_json=dump_evidence(json_safe({**evidence, "baseline": a.name, "candidate": b.name})))
    return decision_row(ref, 0, ids[b.name], gate, ids[a.name], outcome, id_parts=(ids[b.name], gate))



def protocol_summary(ref: RunRef) -> dict[str, object]:
    """The table the CLI prints: one line per gate row."""
    rows = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", "protocol")
    return {"run_id": ref.run_id, **{row.gate: row.reason for row in rows}}
