"""distill (the behaviour diff), gate (attribution) and register of the protocol: a
verdict per (grader, agent, condition) from the stored score rows, never from a re-run
or a recomputed grade.

The native Δ reads only rows of grader-set version 1, the rescore Δ only rows of the
rescore version: a row of any other version in either part is refused (mixed evidence),
and a pair that lacks its rescore row is refused too. Each decision records the verdict,
the noise floor it was weighed against and whether the effect lies inside it.
``decision`` is ``accept`` for "no effect" (the score is robust to the condition) and
``reject`` for every other verdict, which the evidence names."""

from __future__ import annotations

import json
from dataclasses import asdict

from prefect import task

from schemas.ids import derived_id
from schemas.rows import DistillateRow, GateDecisionRow, ScoreRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.gate.evidence import dump_evidence, json_safe
from tasks.loops.trace.episodes import expected_state, required_tools
from tasks.loops.trace.evidence import Rewards, Trajectory, Verdict, behaviour_changed, verdicts
from tasks.loops.trace.stages import NATIVE, agent_ids, protocol_of, stored_runs, task_key
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS


def stored_rewards(ref: RunRef, grader: str, versions: tuple[str, ...]) -> Rewards:
    """(version, agent, condition, task) -> reward of ``grader`` from the score and
    rescore parts, refusing a row whose scorer_version is not its part's."""
    store, agent_of = store_for(ref.store_uri), _agent_of(ref)
    conditions = {e.execution_id: (e.noise_key, task_key(e)) for e, _ in stored_runs(ref)}
    out: dict[tuple[str, str, str, str], float] = {}
    for version in versions:
        stage = "score" if version == NATIVE else "rescore"
        rows: list[ScoreRow] = store.read_part("scores", ref.run_id, stage, f"v{version}")
        for row in rows:
            if row.scorer_version != version:
                raise ValueError(f"score row of {row.execution_id} has scorer version {row.scorer_version} in the "
                                 f"v{version} part: mixed evidence is refused")
            if row.metric == grader:
                condition, task = conditions[row.execution_id]
                out[(version, agent_of[row.candidate_id], condition, task)] = row.value
    return out


def _agent_of(ref: RunRef) -> dict[str, str]:
    return {cid: agent for agent, cid in agent_ids(protocol_of(ref).trace.agents).items()}


def grid(ref: RunRef) -> dict[tuple[str, str], dict[str, Trajectory]]:
    """(agent, condition) -> task -> the stored trajectory."""
    agent_of, out = _agent_of(ref), {}
    for execution, trajectory in stored_runs(ref):
        out.setdefault((agent_of[execution.candidate_id], execution.noise_key), {})[trajectory.task] = trajectory
    return out


@task(name="distill", **STAGE_OPTIONS)
def diff_behaviour(ref: RunRef) -> None:
    """distill: per (agent, condition), the pairs whose actions, observations or final
    state differ from the original run: a `behaviour_diff` distillate whose sources are
    the changed runs' executions."""
    once(ref, "distillates", "distill", "behaviour", lambda: _diffs(ref))


def _diffs(ref: RunRef) -> list[DistillateRow]:
    agent_of = _agent_of(ref)
    execution_of = {(agent_of[e.candidate_id], e.noise_key, t.task): e.execution_id for e, t in stored_runs(ref)}
    runs, rows = grid(ref), []
    for (agent, condition), modified in sorted(runs.items()):
        if condition == "original":
            continue
        original = runs[(agent, "original")]
        changed = sorted(t for t in original if behaviour_changed(original[t], modified[t]))
        content = {"agent": agent, "condition": condition, "pairs": len(original), "changed": changed}
        rows.append(DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, agent, condition), round=0,
                                  kind="behaviour_diff", content=json.dumps(content, sort_keys=True), uri=None,
                                  source_execution_ids=[execution_of[(agent, condition, t)] for t in changed],
                                  support=len(original), status="active"))
    return rows


def run_verdicts(ref: RunRef, grader: str, runs: dict[tuple[str, str], dict[str, Trajectory]]
                 ) -> dict[tuple[str, str], Verdict]:
    """The verdicts of ``grader`` on the stored ``runs`` (`grid`) from the stored rewards."""
    config = protocol_of(ref)
    section = config.trace
    tasks = {t.task: t for by_task in runs.values() for t in by_task.values()}
    expected = {task: expected_state(t) for task, t in tasks.items()}
    required = {task: required_tools(task.split("/", 1)[0]) for task in tasks}
    rewards = stored_rewards(ref, grader, (NATIVE, section.rescore_version))
    return verdicts(runs, grader, expected, required, section.margin, section.resamples, config.seed,
                    fixed=section.rescore_version, rewards=rewards)


@task(name="gate", **STAGE_OPTIONS)
def attribute(ref: RunRef, ids: dict[str, str]) -> list[GateDecisionRow]:
    """gate: the verdict of every (grader, agent, perturbation), with its evidence."""
    return once(ref, "gate_decisions", "gate", "verdicts", lambda: _decisions(ref, ids))


def _decisions(ref: RunRef, ids: dict[str, str]) -> list[GateDecisionRow]:
    section, runs = protocol_of(ref).trace, grid(ref)
    rows = []
    for grader in section.graders:
        for (agent, condition), found in sorted(run_verdicts(ref, grader, runs).items()):
            gate = f"trace:{grader}:{condition}"
            inside = abs(found.delta) <= found.flip_rate
            evidence = {**asdict(found), "agent": agent, "condition": condition, "grader": grader,
                        "native_version": NATIVE, "rescore_version": section.rescore_version,
                        "margin": section.margin, "inside_noise_floor": inside}
            outcome = GateOutcome(
                decision="accept" if found.verdict == "no effect" else "reject",
                reason=reason(agent, condition, grader, found, section.margin, section.rescore_version),
                improved_cases=[], regressed_cases=[], select_score=None, baseline_score=None,
                delta=json_safe(found.delta), ci_low=json_safe(found.ci[0]), ci_high=json_safe(found.ci[1]),
                n_cases=len(runs[(agent, 'original')]), evidence_json=dump_evidence(json_safe(evidence)))
            rows.append(decision_row(ref, 0, ids[agent], gate, ids[agent], outcome, id_parts=(ids[agent], gate),
                                     scorer_version=NATIVE))
    return rows


def reason(agent: str, condition: str, grader: str, found: Verdict, margin: float, fixed: str) -> str:
    floor = "inside" if abs(found.delta) <= found.flip_rate else "outside"
    return (f"{agent} under {condition}, {grader}: Δ {found.delta:+.3f} [{found.ci[0]:+.3f}, {found.ci[1]:+.3f}] "
            f"(±{margin:.2f} margin), behaviour changed in {found.behaviour_changed:.0%} of pairs, rescored "
            f"v{fixed} Δ {found.rescore_delta:+.3f} [{found.rescore_ci[0]:+.3f}, {found.rescore_ci[1]:+.3f}], "
            f"rerun flip rate {found.flip_rate:.3f} ({floor} the noise floor): {found.verdict}")


def protocol_summary(ref: RunRef) -> dict[str, object]:
    """The table the CLI prints: one line per verdict."""
    rows = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", "verdicts")
    agent_of = _agent_of(ref)
    return {"run_id": ref.run_id, **{f"{row.gate}:{agent_of[row.candidate_id]}": row.reason for row in rows}}
