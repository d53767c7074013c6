"""Stage tasks of the medrsi loop, second half: the two gates and the registry.

- admit / enrol (fast discovery): a gain in balanced success on the discovery cases
  admits the tool to the experimental pool, frozen (``admit_to_trial``); the no-delay
  ablation registers it at once instead.
- trial: the round's request batch arrives; every pooled tool admitted before this
  round is run with and without (its frozen stable harness) on the same requests.
- weigh / register_tools (slow registration): ``registration_gate`` per pooled tool,
  in admission order, against the current stable harness; an accept makes the tool's
  harness the new stable one (holdout measured), so every later tool of the pass sees
  a changed stable set and is re-frozen against it for a fresh trial.

Each gate publishes its decision part before its register stage writes the registry
part; the flow runs the two in one transaction and a failed register un-publishes the
decisions. Registry names: ``<suite>/medrsi`` is the stable harness (alias champion);
``<suite>/medrsi/tool/<tool_id>`` holds each pooled tool's experimental -> stable |
retired transitions, each pointing at the gate decision that explains it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.ids import seed_for
from schemas.rows import DistillateRow, GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rollback import remember_decision_part, undo_decision_part
from tasks.gate.rows import decision_row
from tasks.gate.slow_registration import DISCOVERY_GATE, TRIAL_GATE, FrozenTool, TrialBatch, admit_to_trial
from tasks.gate.stage import CHAMPION, registry_name
from tasks.loops.medrsi.medrsi_logic import (
    ToolTrial,
    balanced_success,
    batch_case_ids,
    mean_cost,
    per_template_success,
    registration_pass,
    trial_batches,
)
from tasks.loops.medrsi.medrsi_stages import (
    discovery_cases,
    latest_status,
    metrics_of,
    pool,
    publish_tool,
    request_stream,
    round_key,
    run_on,
    stable_id,
    tool_rows,
    tool_spec,
)
from tasks.runtime.context import (
    RunRef,
    anchored_scorer_version,
    cases_by_split,
    run_config,
    run_suite,
    store_for,
    tracker_for,
)
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score

SEED_GATE = "seed"


def batch_tag(batch_index: int) -> str:
    return f"b{batch_index:04d}"


def frozen_of(row: DistillateRow) -> FrozenTool:
    return FrozenTool(**tool_spec(row)["frozen"])


def versions(ref: RunRef, candidates: set[str], case_ids: set[str]) -> set[str]:
    return {s.scorer_version for s in store_for(ref.store_uri).read_rows("scores", ref.run_id)
            if s.candidate_id in candidates and s.case_id in case_ids}


def _remember(key_stage: str, key: str, ref: RunRef) -> None:
    remember_decision_part(ref, key_stage, key)




# -- registry rows ---------------------------------------------------------------------


def next_version(ref: RunRef, name: str, pending: list[RegistryRow]) -> int:
    earlier = [r for r in store_for(ref.store_uri).read_rows("registry", ref.run_id) if r.name == name]
    return len(earlier) + sum(r.name == name for r in pending) + 1


def registry_row(ref: RunRef, name: str, candidate: str, stage: str, decision: GateDecisionRow,
                 pending: list[RegistryRow], alias: str | None = None, holdout: float | None = None) -> RegistryRow:
    return RegistryRow(run_id=ref.run_id, name=name, version=next_version(ref, name, pending), candidate_id=candidate,
                       stage=stage, alias=alias, decision_id=decision.decision_id, select_score=decision.select_score,
                       holdout_score=holdout, event_at=datetime.now(timezone.utc))


def tool_name(ref: RunRef, row: DistillateRow) -> str:
    return f"{registry_name(run_config(ref))}/tool/{tool_spec(row)['tool_id']}"


def make_stable(ref: RunRef, decision: GateDecisionRow, pending: list[RegistryRow]) -> RegistryRow:
    """The decision's candidate becomes the stable harness; its holdout is measured now."""
    name = registry_name(run_config(ref))
    return registry_row(ref, name, decision.candidate_id, "stable", decision, pending, CHAMPION,
                        holdout_score(ref, decision.candidate_id))


def track(ref: RunRef, decision: GateDecisionRow) -> None:
    store = store_for(ref.store_uri)
    metrics = {"gate_score": decision.select_score, "baseline_score": decision.baseline_score, "delta": decision.delta}
    tracker_for(ref).log_candidate(
        ref.run_id, decision.candidate_id, params={"round": str(decision.round), "gate": decision.gate},
        metrics={k: v for k, v in metrics.items() if v is not None},
        tags={"gate": decision.gate, "decision": decision.decision},
        artifact=store.get_blob(decision.candidate_id), artifact_name="harness.py")


# -- seed ------------------------------------------------------------------------------


def seed_decision(ref: RunRef, seed: str) -> GateDecisionRow:
    """The seed's admission as the first stable toolbox, with its discovery score."""
    cases = [c.case_id for c in discovery_cases(ref)]
    score = balanced_success(metrics_of(ref, seed), cases)
    outcome = GateOutcome("accept", "no stable toolbox yet: the seed harness is the first", [], [], score,
                          None, None, None, None, len(cases), json.dumps({"gate": SEED_GATE}))
    return decision_row(ref, 0, seed, SEED_GATE, None, outcome)


@task(name="admit_seed", **STAGE_OPTIONS)
def admit_seed(ref: RunRef, seed: str) -> str:
    """Round 0: the seed harness is the first stable toolbox (no gate to pass)."""
    decision = once(ref, "gate_decisions", "admit", round_key(0), lambda: [seed_decision(ref, seed)])[0]
    once(ref, "registry", "register", round_key(0), lambda: [make_stable(ref, decision, [])])
    reporter().advance(1, "seed")
    return seed


# -- fast discovery --------------------------------------------------------------------


def discovery_outcome(ref: RunRef, row: DistillateRow) -> GateOutcome:
    config, tool = run_config(ref), frozen_of(row)
    cases = [c.case_id for c in discovery_cases(ref)]
    with_tool = per_template_success(metrics_of(ref, row.distillate_id), cases)
    without = per_template_success(metrics_of(ref, tool.stable_version), cases)
    outcome = admit_to_trial(
        with_tool, without, tool, scorer_versions=versions(ref, {row.distillate_id, tool.stable_version}, set(cases)),
        anchored=anchored_scorer_version(ref), seed=seed_for(config.seed, "admit", row.distillate_id))
    if outcome.decision == "trial" and not config.medrsi.slow_registration:
        return replace(outcome, decision="accept",
                       reason="accept: registered at once (no-delay ablation, no trial); " + outcome.reason)
    return outcome


@task(name="admit", **STAGE_OPTIONS)
def admit(ref: RunRef, round_index: int, candidate: str) -> str:
    """Fast discovery gate on the round's tool; publishes and returns its decision."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    _remember("admit", key, ref)

    def decide() -> list[GateDecisionRow]:
        row = store.read_part("distillates", ref.run_id, "build", key)[0]
        outcome = discovery_outcome(ref, row)
        return [decision_row(ref, round_index, candidate, DISCOVERY_GATE, frozen_of(row).stable_version, outcome)]

    return once(ref, "gate_decisions", "admit", key, decide)[0].decision


admit.on_rollback(undo_decision_part)


@task(name="enrol", **STAGE_OPTIONS)
def enrol(ref: RunRef, round_index: int) -> None:
    """Register the discovery decision: trial -> experimental pool; accept (ablation)
    -> stable at once; reject -> the tool is discarded."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    if store.has_part("registry", ref.run_id, "enrol", key):
        return
    decision = store.read_part("gate_decisions", ref.run_id, "admit", key)[0]
    row = store.read_part("distillates", ref.run_id, "build", key)[0]
    status = {"trial": "experimental", "accept": "stable", "reject": "retired"}[decision.decision]
    store.write_part("distillates", ref.run_id, "enrol", key, [row.model_copy(update={"status": status})])
    pending: list[RegistryRow] = []
    if decision.decision != "reject":
        pending.append(registry_row(ref, tool_name(ref, row), decision.candidate_id, status, decision, pending))
    if decision.decision == "accept":
        pending.append(make_stable(ref, decision, pending))
    track(ref, decision)
    store.write_part("registry", ref.run_id, "enrol", key, pending)
    reporter().advance(0, f"round {round_index}: discovery {decision.decision}")


# -- trial and slow registration -------------------------------------------------------


def in_trial(ref: RunRef, round_index: int) -> list[DistillateRow]:
    """Pooled tool versions admitted (or re-frozen) before this round."""
    return [r for r in pool(ref) if tool_spec(r)["admitted_round"] < round_index]


@task(name="trial", **STAGE_OPTIONS)
def trial(ref: RunRef, round_index: int) -> int:
    """Batch ``round_index`` arrives: run each pooled tool's harness and its frozen
    stable harness on it (same requests, same noise: paired). Returns the tools trialled."""
    config = run_config(ref)
    wanted = set(batch_case_ids(request_stream(ref), config.medrsi.batch_size, round_index))
    cases = [c for c in run_suite(ref).cases() if c.case_id in wanted]
    tools = in_trial(ref, round_index)
    for row in tools:
        for candidate in (row.distillate_id, frozen_of(row).stable_version):
            run_on(ref, batch_tag(round_index), candidate, cases)
    return len(tools)


def trial_batch(ref: RunRef, row: DistillateRow, batch_index: int) -> TrialBatch:
    config = run_config(ref)
    cases = batch_case_ids(request_stream(ref), config.medrsi.batch_size, batch_index)
    with_m, without_m = metrics_of(ref, row.distillate_id), metrics_of(ref, frozen_of(row).stable_version)
    return TrialBatch(batch_tag(batch_index), balanced_success(with_m, cases), balanced_success(without_m, cases),
                      mean_cost(with_m, cases), mean_cost(without_m, cases))


def tool_trial(ref: RunRef, row: DistillateRow, round_index: int) -> ToolTrial:
    config, tool = run_config(ref), frozen_of(row)
    indices = trial_batches(tool_spec(row)["admitted_round"], round_index, config.medrsi.trial_batches)
    stream, size = request_stream(ref), config.medrsi.batch_size
    cases = {c for b in indices for c in batch_case_ids(stream, size, b)}
    return ToolTrial(tool, tuple(trial_batch(ref, row, b) for b in indices),
                     frozenset(versions(ref, {row.distillate_id, tool.stable_version}, cases)),
                     seed_for(config.seed, "register", row.distillate_id))


def weigh_pool(ref: RunRef, round_index: int) -> list[GateDecisionRow]:
    """Registration decisions for every tool in trial, in admission order."""
    config, rows = run_config(ref), in_trial(ref, round_index)
    outcomes = registration_pass([tool_trial(ref, row, round_index) for row in rows], stable_id(ref),
                                 anchored=anchored_scorer_version(ref), n_batches=config.medrsi.trial_batches,
                                 threshold=config.medrsi.gain_threshold)
    return [decision_row(ref, round_index, row.distillate_id, TRIAL_GATE, baseline, outcome)
            for row, (outcome, baseline) in zip(rows, outcomes, strict=True)]


@task(name="weigh", **STAGE_OPTIONS)
def weigh(ref: RunRef, round_index: int) -> list[str]:
    """Slow registration gate over the pool; publishes and returns the decisions."""
    key = round_key(round_index)
    _remember("weigh", key, ref)
    return [d.decision for d in once(ref, "gate_decisions", "weigh", key, lambda: weigh_pool(ref, round_index))]


weigh.on_rollback(undo_decision_part)


def settle(ref: RunRef, round_index: int, decision: GateDecisionRow, row: DistillateRow,
           pending: list[RegistryRow]) -> list[DistillateRow]:
    """Registry rows (into ``pending``) and tool status events for one decision."""
    if decision.decision == "accept":
        pending.append(registry_row(ref, tool_name(ref, row), row.distillate_id, "stable", decision, pending))
        pending.append(make_stable(ref, decision, pending))
        return [row.model_copy(update={"status": "stable", "round": round_index})]
    if decision.decision == "reject":
        pending.append(registry_row(ref, tool_name(ref, row), row.distillate_id, "retired", decision, pending))
        return [row.model_copy(update={"status": "retired", "round": round_index})]
    if not json.loads(decision.evidence_json).get("retest"):
        return []
    current = json.loads(decision.evidence_json)["current_stable_version"]
    spec = {k: v for k, v in tool_spec(row).items() if k not in ("frozen", "admitted_round")}
    key = f"{round_key(round_index)}-{spec['tool_id']}"
    fresh = publish_tool(ref, "refreeze", key, round_index, current, spec, spec["operator"], "experimental")
    pending.append(registry_row(ref, tool_name(ref, row), fresh, "experimental", decision, pending))
    return [row.model_copy(update={"status": "retested", "round": round_index})]


@task(name="register_tools", **STAGE_OPTIONS)
def register_tools(ref: RunRef, round_index: int) -> int:
    """Apply the round's registration decisions: accept -> stable (the tool joins the
    stable toolbox), reject -> retired, re-test -> re-frozen against the current stable
    set for a fresh trial. Returns the number of tools registered."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    decisions = store.read_part("gate_decisions", ref.run_id, "weigh", key)
    if not store.has_part("registry", ref.run_id, "register", key):
        versions_by_id = {r.distillate_id: r for r in latest_status(tool_rows(ref)).values()}
        pending: list[RegistryRow] = []
        events = [e for d in decisions for e in settle(ref, round_index, d, versions_by_id[d.candidate_id], pending)]
        for decision in decisions:
            if decision.decision != "trial":
                track(ref, decision)
        store.write_part("distillates", ref.run_id, "register", key, events)
        store.write_part("registry", ref.run_id, "register", key, pending)
    reporter().advance(1, f"round {round_index}: {sum(d.decision == 'accept' for d in decisions)} registered")
    return sum(d.decision == "accept" for d in decisions)


# -- summary ---------------------------------------------------------------------------


@task(name="summarize")
def medrsi_summary(ref: RunRef) -> dict[str, object]:
    """Seed vs final stable harness on the test split; the tool funnel's counts."""
    store, name = store_for(ref.store_uri), registry_name(run_config(ref))
    stables = sorted((r for r in store.read_rows("registry", ref.run_id) if r.name == name), key=lambda r: r.version)
    test = cases_by_split(run_suite(ref), "test")
    ids = [c.case_id for c in test]
    for row in (stables[0], stables[-1]):
        run_on(ref, "test", row.candidate_id, test)
    seed_m, final_m = metrics_of(ref, stables[0].candidate_id), metrics_of(ref, stables[-1].candidate_id)
    events = tool_rows(ref)
    decisions = store.read_rows("gate_decisions", ref.run_id)
    return {
        "run_id": ref.run_id, "suite": run_suite(ref).name, "metric": "success",
        "candidate_id": stables[-1].candidate_id, "stable_versions": len(stables),
        "seed_test_success": fmean(seed_m[c]["success"] for c in ids),
        "test_success": fmean(final_m[c]["success"] for c in ids),
        "seed_test_balanced": balanced_success(seed_m, ids), "test_balanced": balanced_success(final_m, ids),
        "holdout_score": stables[-1].holdout_score, "seed_holdout_success": stables[0].holdout_score,
        "discovered": sum(e.status == "proposed" for e in events),
        "admitted": sum(d.gate == DISCOVERY_GATE and d.decision != "reject" for d in decisions),
        "registered": sum(e.status == "stable" for e in events),
        "retired": sum(d.gate == TRIAL_GATE and d.decision == "reject" for d in decisions),
        "retests": sum(e.status == "retested" for e in events),
        "in_pool": len(pool(ref)),
    }

