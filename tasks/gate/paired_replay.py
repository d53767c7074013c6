"""Paired-replay gates: Self-Healing Harness, and Designer-RSI through the same function.

Self-Healing Harness (paper's rule): replay up to 3 failing cases that triggered the
proposal and 2 protected (previously passing) cases, with and without the candidate
rule, under the same noise. Keep the rule iff it improves at least one triggering
failure AND no measured metric drops by more than the tolerance. When replay is
impossible, the fallback decides from the next 3 unpaired executions, which carry no
protected cases, so the evidence is weaker (`followup_gate`).

Designer-RSI (paper's rule): paired replay of the candidate skill against the old one,
the old skill's successes replayed too; admit only if there is no regression and at
least one improvement. That is `paired_replay_gate` with `designer_rsi_rule`: every
available case replayed (the paper gives no counts), the improvement may be on any
replayed case, not only a trigger.

Choices where the papers are silent:
- tolerance 0.0: any drop of any measured metric is a regression (exact for binary
  success); a drop of exactly `tolerance` is allowed, anything beyond it is not
  (a 1e-12 float slack absorbs rounding).
- "improves" on the primary metric means a gain beyond 1e-12; metrics named in
  `lower_is_better` (cost, latency) improve downwards.
- which k triggers and m protected cases are replayed: the first k / m by
  sha256(salt, case_id). Order-independent, reproducible across processes; a salt such
  as the candidate id spreads replays over different protected cases.
- `delta`, `ci_low`, `ci_high` are raw after − before on the primary metric (paired
  bootstrap over the replayed cases), whatever the metric's direction.

The evidence JSON carries `fixed_trigger` and `broke_protected` (the paper's key
statistic: 55% of replay-rejected rules fixed their trigger but broke a protected case),
`broken_protected_cases`, and every replayed case's before/after values, so SQL over
`gate_decisions.evidence_json` can answer which protected cases rejected rules broke."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass
from statistics import fmean
from typing import Any, Collection, Iterable, Mapping, Sequence

from tasks.gate.best_so_far import CASE_TOL, GateOutcome, check_anchor
from tasks.gate.evidence import dump_evidence, no_evidence, require_finite
from tasks.gate.stats import paired_bootstrap_ci, unpaired_bootstrap_ci

ROLES = ("trigger", "protected")
IMPROVEMENT_ON = ("trigger", "any")


@dataclass(frozen=True)
class ReplayRule:
    """The thresholds of a replay gate; recorded whole in the evidence."""

    primary: str
    """The metric a trigger must improve on (e.g. task completion)."""
    k: int | None = 3
    """Trigger cases replayed at most (paper: 3); None replays all."""
    m: int | None = 2
    """Protected cases replayed at most (paper: 2); None replays all."""
    tolerance: float = 0.0
    """Largest allowed drop of any measured metric on any replayed case."""
    lower_is_better: tuple[str, ...] = ()
    """Metrics that improve downwards (cost, latency)."""
    improvement_on: str = "trigger"
    """"trigger": a trigger must improve (Self-Healing); "any": any replayed case (Designer-RSI)."""
    followup_n: int = 3
    """Unpaired executions the no-replay fallback decides from (paper: 3)."""
    name: str = "self_healing_replay"

    def __post_init__(self) -> None:
        if self.k is not None and self.k < 1:
            raise ValueError(f"ReplayRule.k={self.k}: replay at least one trigger case, or None for all")
        if self.m is not None and self.m < 0:
            raise ValueError(f"ReplayRule.m={self.m}: replay zero or more protected cases, or None for all")
        if self.tolerance < 0:
            raise ValueError(f"ReplayRule.tolerance={self.tolerance}: a tolerance is a non-negative drop")
        if self.improvement_on not in IMPROVEMENT_ON:
            raise ValueError(f"ReplayRule.improvement_on={self.improvement_on!r}: choose one of {IMPROVEMENT_ON}")
        if self.followup_n < 1:
            raise ValueError(f"ReplayRule.followup_n={self.followup_n}: the follow-up path needs at least one run")
        if isinstance(self.lower_is_better, str):
            raise TypeError(f"ReplayRule.lower_is_better={self.lower_is_better!r}: pass a tuple of metric names")
        object.__setattr__(self, "lower_is_better", tuple(sorted(self.lower_is_better)))


def designer_rsi_rule(primary: str, tolerance: float = 0.0) -> ReplayRule:
    """Designer-RSI's gate: replay every target case and every old success; admit on no
    regression and at least one improvement on any replayed case."""
    return ReplayRule(primary=primary, k=None, m=None, tolerance=tolerance, improvement_on="any",
                      name="designer_rsi_replay")


@dataclass(frozen=True)
class ReplayCase:
    """One replayed case: every measured metric without the candidate (`before`) and with
    it (`after`), under the same noise. `role` is "trigger" (a failing case that triggered
    the proposal) or "protected" (a previously passing case)."""

    case_id: str
    role: str
    before: Mapping[str, float]
    after: Mapping[str, float]

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"replay case {self.case_id!r}: role {self.role!r} is not one of {ROLES}")
        if not self.before or set(self.before) != set(self.after):
            raise ValueError(
                f"replay case {self.case_id!r}: before measures {sorted(self.before)}, after measures "
                f"{sorted(self.after)}; a paired replay measures the same metrics on both sides"
            )
        for side, values in (("before", self.before), ("after", self.after)):
            for metric, value in values.items():
                require_finite(value, f"replay case {self.case_id!r} {side}[{metric!r}]")


@dataclass(frozen=True)
class FollowupRun:
    """One unpaired execution for the no-replay fallback: every measured metric."""

    case_id: str
    metrics: Mapping[str, float]

    def __post_init__(self) -> None:
        for metric, value in self.metrics.items():
            require_finite(value, f"follow-up run on case {self.case_id!r} [{metric!r}]")


def select_replay(
    trigger_ids: Iterable[str], protected_ids: Iterable[str], k: int | None = 3, m: int | None = 2, salt: str = ""
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The trigger and protected case ids to replay: each role's first k / m by
    sha256(salt, case_id) (all when None). Call it before executing the replay too."""
    return _take(trigger_ids, k, salt), _take(protected_ids, m, salt)


def _take(ids: Iterable[str], limit: int | None, salt: str) -> tuple[str, ...]:
    ranked = sorted(set(ids), key=lambda i: (hashlib.sha256(f"{salt}\x00{i}".encode()).hexdigest(), i))
    return tuple(ranked if limit is None else ranked[:limit])


def _gain(rule: ReplayRule, metric: str, before: float, after: float) -> float:
    """The change in the metric's good direction."""
    return before - after if metric in rule.lower_is_better else after - before


def _judge_case(case: ReplayCase, rule: ReplayRule) -> dict[str, Any]:
    if rule.primary not in case.before:
        raise ValueError(f"replay case {case.case_id!r} does not measure the primary metric {rule.primary!r}")
    gains = {metric: _gain(rule, metric, case.before[metric], case.after[metric]) for metric in sorted(case.before)}
    return {
        "case_id": case.case_id, "role": case.role,
        "before": dict(sorted(case.before.items())), "after": dict(sorted(case.after.items())), "gain": gains,
        "improved": gains[rule.primary] > CASE_TOL,
        "regressed_metrics": [m for m, g in gains.items() if g < -(rule.tolerance + CASE_TOL)],
    }


def _replay_reason(rule: ReplayRule, judged: list[dict[str, Any]], accept: bool, flags: dict[str, bool]) -> str:
    counts = {role: sum(j["role"] == role for j in judged) for role in ROLES}
    where = "trigger" if rule.improvement_on == "trigger" else "replayed"
    improved = [j["case_id"] for j in judged if j["improved"] and where in ("replayed", j["role"])]
    regressions = [
        f"{j['role']} {j['case_id']} ({m} {j['before'][m]:g} -> {j['after'][m]:g})"
        for j in judged for m in j["regressed_metrics"]
    ]
    parts = [
        f"replayed {counts['trigger']} trigger + {counts['protected']} protected case(s) with vs without the candidate",
        f"{where} case(s) improved on {rule.primary}: {', '.join(improved)}" if improved
        else f"no {where} case improved on {rule.primary}",
        f"regressed beyond tolerance {rule.tolerance:g}: {'; '.join(regressions)}" if regressions
        else f"no measured metric regressed beyond tolerance {rule.tolerance:g}",
    ]
    verdict = "accept" if accept else "reject"
    if flags["fixed_trigger"] and flags["broke_protected"]:
        verdict += " (fixed its trigger but broke a protected case)"
    return f"{verdict}: " + "; ".join(parts)


def paired_replay_gate(
    cases: Sequence[ReplayCase], rule: ReplayRule, *, scorer_versions: Collection[str], anchored: str,
    salt: str = "", seed: int = 0,
) -> GateOutcome:
    """Replay gate over paired before/after evidence (see the module docstring).

    Cases beyond the rule's k / m are not weighed; no replayable case is a reject."""
    check_anchor(set(scorer_versions), anchored)
    duplicated = sorted(i for i, n in Counter(c.case_id for c in cases).items() if n > 1)
    if duplicated:
        raise ValueError(f"replay evidence lists case(s) {duplicated} more than once")
    by_id = {c.case_id: c for c in cases}
    triggers, protected = select_replay([c.case_id for c in cases if c.role == "trigger"],
                                        [c.case_id for c in cases if c.role == "protected"], rule.k, rule.m, salt)
    judged = [_judge_case(by_id[i], rule) for i in (*triggers, *protected)]
    fixed = [j["case_id"] for j in judged if j["role"] == "trigger" and j["improved"]]
    broken = [j["case_id"] for j in judged if j["role"] == "protected" and j["regressed_metrics"]]
    flags = {"fixed_trigger": bool(fixed), "broke_protected": bool(broken)}
    evidence = {
        "gate": rule.name, "path": "replay", "rule": asdict(rule), "salt": salt,
        "available": {role: sum(c.role == role for c in cases) for role in ROLES},
        "replayed": {"trigger": list(triggers), "protected": list(protected)},
        **flags, "fixed_trigger_cases": fixed, "broken_protected_cases": broken, "cases": judged,
    }
    if not judged:
        return no_evidence("reject", "reject: no replay evidence (no trigger or protected case was replayed)", evidence)
    improved = [j["case_id"] for j in judged if j["improved"]]
    regressed = [j["case_id"] for j in judged if j["regressed_metrics"]]
    accept = bool(fixed if rule.improvement_on == "trigger" else improved) and not regressed
    before = [j["before"][rule.primary] for j in judged]
    after = [j["after"][rule.primary] for j in judged]
    diffs = [a - b for a, b in zip(after, before)]
    low, high = paired_bootstrap_ci(diffs, seed=seed)
    return GateOutcome(
        decision="accept" if accept else "reject", reason=_replay_reason(rule, judged, accept, flags),
        improved_cases=improved, regressed_cases=regressed, select_score=fmean(after), baseline_score=fmean(before),
        delta=fmean(diffs), ci_low=low, ci_high=high, n_cases=len(judged), evidence_json=dump_evidence(evidence),
    )


def _check_metrics(runs: Sequence[FollowupRun], rule: ReplayRule) -> list[str]:
    """The metric set every run measures; it must be one set, containing the primary."""
    metric_sets = {tuple(sorted(r.metrics)) for r in runs}
    if len(metric_sets) > 1:
        raise ValueError(f"follow-up and baseline runs measure different metrics: {sorted(metric_sets)}")
    metrics = list(metric_sets.pop()) if metric_sets else [rule.primary]
    if rule.primary not in metrics:
        raise ValueError(f"follow-up runs do not measure the primary metric {rule.primary!r} (they measure {metrics})")
    return metrics


def _harm(
    rule: ReplayRule, metrics: list[str], runs: Sequence[FollowupRun], baseline: Sequence[FollowupRun]
) -> tuple[dict[str, dict[str, float]], list[str], dict[str, float], list[dict[str, Any]]]:
    """Per metric the follow-up and baseline means, the metrics whose mean dropped beyond
    tolerance, and the runs worse than the worst baseline run beyond tolerance."""
    limit = -(rule.tolerance + CASE_TOL)
    means = {m: {"followup": fmean(r.metrics[m] for r in runs), "baseline": fmean(b.metrics[m] for b in baseline)}
             for m in metrics}
    regressed = [m for m in metrics if _gain(rule, m, means[m]["baseline"], means[m]["followup"]) < limit]
    worst = {m: (max if m in rule.lower_is_better else min)(b.metrics[m] for b in baseline) for m in metrics}
    harmful = [{"case_id": r.case_id, "metrics": [m for m in metrics if _gain(rule, m, worst[m], r.metrics[m]) < limit]}
               for r in runs]
    return means, regressed, worst, [h for h in harmful if h["metrics"]]


def _followup_reason(
    rule: ReplayRule, primary: dict[str, float], improved: bool, regressed: list[str], n_harmful: int
) -> str:
    tolerance = f"beyond tolerance {rule.tolerance:g}"
    return (
        f"mean {rule.primary} {primary['followup']:.6g} vs {primary['baseline']:.6g} "
        f"({'improved' if improved else 'not improved'}); "
        + (f"mean dropped {tolerance} on {', '.join(regressed)}; " if regressed else "")
        + (f"{n_harmful} run(s) worse than the worst baseline run {tolerance}" if n_harmful
           else f"no run worse than the worst baseline run {tolerance}")
    )


def followup_gate(
    runs: Sequence[FollowupRun], baseline: Sequence[FollowupRun], rule: ReplayRule, *,
    scorer_versions: Collection[str], anchored: str, seed: int = 0,
) -> GateOutcome:
    """The no-replay fallback: decide from the next `rule.followup_n` unpaired executions
    with the rule active (in execution order; later ones are not weighed), against recent
    unpaired runs of the same template / trigger class without it (`baseline`).

    The paper names the path and its weakness but not its rule; chosen here:
    - no baseline runs: reject (nothing to compare with);
    - fewer than n follow-up runs: trial (the evidence is still arriving);
    - accept iff the follow-up mean of the primary metric beats the baseline mean (strictly:
      an unchanged class shows no fix), no measured metric's mean drops below the baseline
      mean by more than the tolerance, and no run does harm: none is worse on any metric
      than the worst baseline run by more than the tolerance.
    `delta` is the difference of means, its CI an unpaired bootstrap."""
    check_anchor(set(scorer_versions), anchored)
    metrics = _check_metrics([*runs, *baseline], rule)
    used = list(runs[: rule.followup_n])
    evidence: dict[str, Any] = {
        "gate": rule.name, "path": "followup", "weaker_evidence": True, "rule": asdict(rule),
        "fixed_trigger": None, "broke_protected": None, "ignored_runs": len(runs) - len(used),
        "runs": [asdict(r) for r in used], "baseline_runs": [asdict(b) for b in baseline],
    }
    weaker = f"follow-up path, weaker evidence ({len(used)} unpaired run(s), no protected cases)"
    if not baseline:
        reason = f"reject: {weaker}: no baseline runs of the trigger class to compare with"
        return no_evidence("reject", reason, evidence)
    if len(used) < rule.followup_n:
        reason = f"trial: {weaker}: {len(used)} of {rule.followup_n} follow-up runs so far"
        return no_evidence("trial", reason, evidence)
    means, regressed, worst, harmful = _harm(rule, metrics, used, baseline)
    primary = means[rule.primary]
    improved = _gain(rule, rule.primary, primary["baseline"], primary["followup"]) > CASE_TOL
    accept = improved and not regressed and not harmful
    evidence |= {"means": means, "regressed_metrics": regressed, "worst_baseline": worst, "harmful_runs": harmful}
    reason = f"{'accept' if accept else 'reject'}: {weaker} vs {len(baseline)} baseline run(s): " + _followup_reason(
        rule, primary, improved, regressed, len(harmful))
    sample = [r.metrics[rule.primary] for r in used]
    low, high = unpaired_bootstrap_ci(sample, [b.metrics[rule.primary] for b in baseline], seed=seed)
    gainers = [r.case_id for r, v in zip(used, sample) if _gain(rule, rule.primary, primary["baseline"], v) > CASE_TOL]
    return GateOutcome(
        decision="accept" if accept else "reject", reason=reason, improved_cases=list(dict.fromkeys(gainers)),
        regressed_cases=list(dict.fromkeys(h["case_id"] for h in harmful)), select_score=primary["followup"],
        baseline_score=primary["baseline"], delta=primary["followup"] - primary["baseline"], ci_low=low,
        ci_high=high, n_cases=len(used), evidence_json=dump_evidence(evidence),
    )
