"""The protocol's stages at their Prefect boundaries. Every stage publishes its parts
once (`tasks.runtime.parts.once`, `write_part` behind `has_part`), so a retry or
`ratchet resume` recomputes nothing it holds.

Tables: ``steps`` (the reference trajectories, part ``reference``/``all``; each closed-loop
run's, part ``closed``/``m<k>-<ckpt>``), ``candidates`` (the checkpoints: the paper's
``models(model, ckpt, sft_epochs)``), ``train_steps`` (one row per epoch),
``decisions`` (L1–L3 per gold-history turn) and ``closed_loop`` (L4–L5 per run).
"""

from __future__ import annotations

import json
from collections import defaultdict
from importlib import resources

from prefect import task

from schemas.ids import derived_id
from schemas.loops import BetterTurnsRun
from schemas.rows import CandidateRow, ClosedLoopRow, DecisionRow, StepRow, TrainStepRow
from suites.base import Case
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import load_harness
from tasks.loops.better_turns.closed_loop import run_closed_loop
from tasks.loops.better_turns.history import Turn, reference_turns
from tasks.loops.better_turns.policy import Example, Policy, train
from tasks.loops.better_turns.turns import STOP, exact, judge_ok, render, token_f1, turn_kind
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

CHECKPOINTS = ("base", "sft")


def protocol_of(ref: RunRef) -> BetterTurnsRun:
    return run_config(ref)


def reference_harness():
    """The scripted reference agent's harness (``reference.json``)."""
    return load_harness(json.loads((resources.files(__package__) / "reference.json").read_text())["document"])


def model_name(index: int) -> str:
    return f"bc-s{index}"


def _step_rows(ref: RunRef, execution_id: str, steps) -> list[StepRow]:
    return [StepRow(run_id=ref.run_id, execution_id=execution_id, **step) for step in steps]


@task(name="sample", **STAGE_OPTIONS)
def record_references(ref: RunRef) -> None:
    """sample: the scripted reference agent on every conversation, its trajectories
    stored once as the run's gold histories."""
    def rows() -> list[StepRow]:
        harness = reference_harness()
        return [row for case in run_suite(ref).cases()
                for row in _step_rows(ref, derived_id(ref.run_id, "reference", case.case_id),
                                      run_episode(case.payload, harness).steps)]

    once(ref, "steps", "reference", "all", rows)


def references(ref: RunRef) -> dict[str, tuple[Case, list[dict], list[Turn]]]:
    """case_id -> (case, reference steps read back from the table, its decisions)."""
    by_execution: dict[str, list[dict]] = defaultdict(list)
    for row in store_for(ref.store_uri).read_part("steps", ref.run_id, "reference", "all"):
        by_execution[row.execution_id].append(row.model_dump(exclude={"run_id", "execution_id"}))
    out = {}
    for case in run_suite(ref).cases():
        steps = sorted(by_execution[derived_id(ref.run_id, "reference", case.case_id)], key=lambda s: s["step"])
        out[case.case_id] = (case, steps, reference_turns(case.payload["template"], case.payload["params"], steps))
    return out


def _examples(refs, keep) -> list[Example]:
    return [(t.features, t.action.label()) for case, _, turns in refs.values() if case.split == "train" and keep(case)
            for t in turns]


@task(name="train", **STAGE_OPTIONS)
def train_checkpoints(ref: RunRef, index: int) -> dict[str, str]:
    """sample (checkpoints): model ``index``'s base (few logs of the mismatched templates)
    and its SFT (``sft_epochs`` more on every train conversation), each a candidate whose
    id is the sha256 of its weights, with one ``train_steps`` row per epoch."""
    config, store = protocol_of(ref), store_for(ref.store_uri)
    section, seed = config.better_turns, config.seed * 1000 + index
    key = f"m{index:02d}"

    def rows() -> list[CandidateRow]:
        refs = references(ref)
        everything = _examples(refs, lambda c: True)
        few_cases = _first_train(refs, section.base_templates, section.base_logs)
        few = _examples(refs, lambda c: c.case_id in few_cases)
        base, base_losses = train(Policy.initial(everything, seed), few, section.base_epochs, section.lr,
                                  section.batch_size, seed)
        sft, sft_losses = train(base, everything, section.sft_epochs, section.lr, section.batch_size, seed + 1)
        base_id, sft_id = store.put_blob(base.to_bytes()), store.put_blob(sft.to_bytes())
        _write_losses(ref, key, {base_id: (base_losses, len(few)), sft_id: (sft_losses, len(everything))})
        return [_candidate(ref, base_id, [], "base", f"{model_name(index)} base: {len(few)} decisions of "
                           f"{', '.join(section.base_templates)}, {section.base_epochs} epochs, sft_epochs=0"),
                _candidate(ref, sft_id, [base_id], "sft", f"{model_name(index)} sft: {len(everything)} decisions "
                           f"of every template, sft_epochs={section.sft_epochs}")]

    found = once(ref, "candidates", "train", key, rows)
    return {row.operator: row.candidate_id for row in found}


def _first_train(refs, templates, per_template: int) -> set[str]:
    """The first ``per_template`` train conversations (by instance) of each template."""
    found: dict[str, list[str]] = defaultdict(list)
    for case, _, _ in sorted(refs.values(), key=lambda v: v[0].case_id):
        if case.split == "train" and case.payload["template"] in templates:
            found[case.payload["template"]].append(case.case_id)
    return {conv for convs in found.values() for conv in convs[:per_template]}


def _candidate(ref: RunRef, blob: str, parents: list[str], ckpt: str, summary: str) -> CandidateRow:
    return CandidateRow(run_id=ref.run_id, candidate_id=blob, round=0, parent_ids=parents, operator=ckpt,
                        proposer="behaviour_cloning", artifact_kind="weights",
                        artifact_uri=store_for(ref.store_uri).blob_uri(blob), island=-1, summary=summary)


def _write_losses(ref: RunRef, key: str, losses: dict[str, tuple[list[float], int]]) -> None:
    rows = [TrainStepRow(run_id=ref.run_id, candidate_id=cid, step=epoch + 1, loss=loss, metrics={}, tokens=0,
                         samples=n, wall_s=0.0)
            for cid, (values, n) in losses.items() for epoch, loss in enumerate(values)]
    store = store_for(ref.store_uri)
    if not store.has_part("train_steps", ref.run_id, "train", key):
        store.write_part("train_steps", ref.run_id, "train", key, rows)


@task(name="score", **STAGE_OPTIONS)
def score_checkpoint(ref: RunRef, index: int, ckpt: str, candidate_id: str) -> None:
    """execute + score: the checkpoint on every held-out conversation, turn by turn on the
    reference history (``decisions``) and in closed loop (``closed_loop``, ``steps``)."""
    config, store = protocol_of(ref), store_for(ref.store_uri)
    key, model = f"m{index:02d}-{ckpt}", model_name(index)
    policy = Policy.from_bytes(store.get_blob(candidate_id))
    held_out = [v for v in references(ref).values() if v[0].split in config.better_turns.eval_splits]
    once(ref, "decisions", "score", key, lambda: [
        _decision(ref, candidate_id, model, ckpt, case.case_id, turn, policy)
        for case, _, turns in held_out for turn in turns if turn.action.kind != STOP])
    runs = {case.case_id: run_closed_loop(policy, case.payload, steps, config.better_turns.retries)
            for case, steps, _ in held_out} if not store.has_part("closed_loop", ref.run_id, "score", key) else {}
    if runs and not store.has_part("steps", ref.run_id, "closed", key):
        store.write_part("steps", ref.run_id, "closed", key, [
            row for conv, run in runs.items() for row in _step_rows(ref, derived_id(ref.run_id, candidate_id, conv),
                                                                    run.steps)])
    once(ref, "closed_loop", "score", key, lambda: [
        ClosedLoopRow(run_id=ref.run_id, candidate_id=candidate_id, model=model, ckpt=ckpt, conv_id=conv,
                      execution_id=derived_id(ref.run_id, candidate_id, conv), completed=run.completed,
                      retries=run.retries, status=run.status, goal_ok=run.goal_ok, policy_ok=run.policy_ok,
                      tool_use_ok=run.tool_use_ok) for conv, run in sorted(runs.items())])
    reporter().advance(1, f"{model} {ckpt}")


def _decision(ref: RunRef, candidate_id: str, model: str, ckpt: str, conv_id: str, turn: Turn,
              policy: Policy) -> DecisionRow:
    pred, variables = policy.predict(turn.features), turn.variables
    ref_line, pred_line = render(turn.action, variables), render(pred, variables)
    return DecisionRow(run_id=ref.run_id, candidate_id=candidate_id, model=model, ckpt=ckpt, conv_id=conv_id,
                       turn=turn.index, kind=turn_kind(turn.action), ref=ref_line, pred=pred_line,
                       sim=token_f1(pred_line, ref_line), judge_ok=judge_ok(pred, turn.action, variables),
                       tool_exact=exact(pred, turn.action, variables))


def recorded(ref: RunRef) -> tuple[list[DecisionRow], list[ClosedLoopRow]]:
    """Every decision and closed-loop row of the run's models."""
    store, budget = store_for(ref.store_uri), protocol_of(ref).budget
    keys = [f"m{i:02d}-{c}" for i in range(budget) for c in CHECKPOINTS]
    return ([r for k in keys for r in store.read_part("decisions", ref.run_id, "score", k)],
            [r for k in keys for r in store.read_part("closed_loop", ref.run_id, "score", k)])

