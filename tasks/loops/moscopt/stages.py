"""Stage tasks of the moscopt loop: ``plant`` (round 0: the seed harness runs the train
cases, its failures fix the edit catalogue and the seed pool; the seed state is admitted
and registered) and ``edit_round`` (one round of ``loop.run_round``: execute + score
through the sandbox, distill the statistics and memories, sample one edit of the
round's stage, gate it on validation, register an accepted state).

Execution: the episode of a task runs the harness its template's K loaded skills
compose; that harness program is a candidate (content id) run by the sandboxed runner
(``harness_loops.episodes.run_missing``) and scored by the trusted scorer, at most once
per case in a run, so a state that keeps a template's loading reuses its episodes.

Tables (``distillates`` rows, ``kind`` = the table, JSON ``content``; ``ratchet sql``
reads them with ``json_extract``): ``moscopt_skills`` (id, ver, text, summary, parents,
origin), ``moscopt_skill_stats`` (round, id, n_active, n_success), ``moscopt_gating``
(ver, round, text, val), ``moscopt_selections`` (episode, step, g_ver, skill_ids),
``moscopt_edits`` (id, round, stage, operator, target, diff, val_before, val_after,
accepted), ``moscopt_episodes`` (id, round, task_id, split, success, reruns) and
``moscopt_state`` (the round's state, memory and statistics, read by the next round).
Every part is keyed by stage and round (``once``): a retry or a resume writes nothing new.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from prefect import task

from schemas.ids import seed_for
from schemas.rows import CandidateRow, DistillateRow, GateDecisionRow, RegistryRow
from suites.toolsim.templates import TEMPLATES
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.gate.stage import CHAMPION, registry_name
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import episodes, executions_of, run_missing
from tasks.harness_loops.llm_edit import unusable_row
from tasks.harness_loops.metrics import case_metrics
from tasks.harness_loops.seed import publish_seed
from tasks.loops.moscopt.catalogue import catalogue
from tasks.loops.moscopt.edits import Memory, propose
from tasks.loops.moscopt.llm import LLMProposer
from tasks.loops.moscopt.loop import Knobs, Outcome, Round, Simulate, mean_success, run_round
from tasks.loops.moscopt.pool import State, seed_pool
from tasks.loops.moscopt.tables import STATE, outcome_rows, round_rows, skill_rows, state_body
from tasks.proposers.rule_evidence import trace_of
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import distillate, distilled, once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

GATE_SEED = "seed"


def round_key(round_index: int) -> str:
    return f"r{round_index:04d}"


def knobs_of(ref: RunRef) -> Knobs:
    m = run_config(ref).moscopt
    return Knobs(k=m.k, period=m.period, max_pool=m.max_pool, min_delta=m.min_delta,
                 freeze_gating=m.freeze_gating, all_at_once=m.all_at_once)


def publish_program(ref: RunRef, document: dict, round_index: int, summary: str) -> str:
    """A composed harness as a candidate (its id: the sha256 of its program), once."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    blob = store.put_blob(harness_source(document, title="A MOSCOPT loading: the K skills G loads, composed.").encode())
    once(ref, "candidates", "compose", f"c-{blob[:24]}", lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[], operator="compose", proposer="moscopt",
        artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob), island=-1, summary=summary)])
    return blob


def sandboxed_simulator(ref: RunRef, round_index: int) -> Simulate:
    """``Simulate`` through the sandbox: per template, the loaded skills' harness runs
    that template's cases of the split (once per case in the run) and is scored."""
    k, cases = knobs_of(ref).k, run_suite(ref).cases()

    def simulate(state: State, split: str) -> list[Outcome]:
        out = []
        for template in TEMPLATES:
            group = [c for c in cases if c.split == split and c.payload["template"] == template]
            if not group:
                continue
            loaded = tuple(state.loaded(template, k))
            program = publish_program(ref, state.document(template, k), round_index, f"{template}: {len(loaded)} skills")
            run_missing(ref, f"ms-{split}-{template}-{program[:16]}", program, group)
            scores = case_metrics(store_for(ref.store_uri).read_rows("scores", ref.run_id), program, (split,))
            out += [Outcome(c.case_id, template, loaded, scores[c.case_id]["success"]) for c in group]
        return sorted(out, key=lambda o: o.case_id)

    return simulate


def publish_state(ref: RunRef, state: State, round_index: int) -> str:
    """The state (pool + G) as a candidate: what the gate decides on and the registry holds."""
    store = store_for(ref.store_uri)
    text = json.dumps({"pool": list(state.pool.values()), "gating": state.gating}, sort_keys=True)
    blob = store.put_blob(text.encode())
    once(ref, "candidates", "moscopt", f"s-{blob[:24]}", lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[], operator="state", proposer="moscopt",
        artifact_kind="moscopt_state", artifact_uri=store.blob_uri(blob), island=-1,
        summary=f"{len(state.pool)} skills, G {state.gating_id()[:12]}")])
    return blob


def registration(ref: RunRef, decision: GateDecisionRow, state: State, round_index: int) -> list[RegistryRow]:
    """An accepted state becomes the next champion version; its holdout measured here only."""
    store, name = store_for(ref.store_uri), registry_name(run_config(ref))
    if decision.decision != "accept":
        return []
    earlier = [r for r in store.read_rows("registry", ref.run_id) if r.name == name]
    holdout = sandboxed_simulator(ref, round_index)(state, "holdout")
    return [RegistryRow(run_id=ref.run_id, name=name, version=len(earlier) + 1, candidate_id=decision.candidate_id,
                        stage="stable", alias=CHAMPION, decision_id=decision.decision_id,
                        select_score=decision.select_score, holdout_score=mean_success(holdout) if holdout else None,
                        event_at=datetime.now(timezone.utc))]


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Round 0: the seed harness's train failures fix the catalogue and the seed pool
    (G empty: every template loads the first K skills by id); the seed state is admitted."""
    seed = publish_seed(ref, "moscopt", round_key(0), "the suite's seed harness (no skills loaded)")
    cases = run_suite(ref).cases()
    run_missing(ref, f"train-{seed[:20]}", seed, [c for c in cases if c.split == "train"])

    def rows() -> list[DistillateRow]:
        traces = sorted((trace_of(c.case_id, c.payload, ep) for _, c, ep in
                         episodes(ref, executions_of(ref, f"train-{seed[:20]}", seed))), key=lambda t: t.case_id)
        edits = catalogue(traces)
        state = State.of(seed_pool(edits["rules"], edits["plans"]))
        val = sandboxed_simulator(ref, 0)(state, "select")
        body = state_body(state, Memory(), {}, edits)
        return [*skill_rows(ref, 0, state, {}, "seed"), *outcome_rows(ref, 0, "select", val, state),
                distillate(ref, STATE, 0, body)]

    published = once(ref, "distillates", "plant", round_key(0), rows)
    state = State.of(json.loads(next(r for r in published if r.kind == STATE).content)["pool"])
    state_id = publish_state(ref, state, 0)
    val = [r for r in distilled(ref, "moscopt_episodes") if r["round"] == 0]
    decision = decision_row(ref, 0, state_id, GATE_SEED, None, GateOutcome(
        decision="accept", reason="no champion yet: the seed pool is the first", improved_cases=[],
        regressed_cases=[], select_score=sum(r["success"] for r in val) / max(len(val), 1), baseline_score=None,
        delta=None, ci_low=None, ci_high=None, n_cases=len(val),
        evidence_json=json.dumps({"gate": GATE_SEED, "pool": list(state.pool)})))
    (decision,) = once(ref, "gate_decisions", "gate", round_key(0), lambda: [decision])
    once(ref, "registry", "register", round_key(0), lambda: registration(ref, decision, state, 0))
    reporter().advance(1, "seed pool")
    return state_id


def previous(ref: RunRef, round_index: int) -> tuple[State, Memory, dict, dict]:
    """(state, memory, statistics, catalogue) after round ``round_index``."""
    body = next(b for b in distilled(ref, STATE) if b["round"] == round_index)
    stats = {s: tuple(v) for s, v in body["stats"].items()}
    memory = Memory(set(body["rejected"]), dict(body["experience"]))
    return State.of(body["pool"], body["gating"]), memory, stats, body["catalogue"]


@task(name="edit_round", **STAGE_OPTIONS)
def edit_round(ref: RunRef, round_index: int) -> str:
    """One round: execute + score (train, select), distill (statistics, memories),
    sample one edit of the round's stage, gate it on validation, register if accepted.
    Returns the decision ("accept", "reject" or "none": no edit found)."""
    key, computed, refused = round_key(round_index), [], []

    def compute() -> tuple:
        if not computed:
            state, memory, stats, edits = previous(ref, round_index - 1)
            seed = seed_for(run_config(ref).seed, "moscopt", round_index)
            config = run_config(ref)
            proposer = LLMProposer(config.evolve) if config.proposer == "llm" else propose
            computed.append((run_round(round_index, state, memory, stats, edits, knobs_of(ref),
                                       sandboxed_simulator(ref, round_index), seed, proposer), memory, edits, state))
            refused.extend(getattr(proposer, "refused", []))
        return computed[0]

    def unusable() -> list[CandidateRow]:  # none when resumed past the proposal (nothing was asked now)
        rows = (unusable_row(ref, round_index, target, why) for target, why in refused)
        return list({r.candidate_id: r for r in rows}.values())

    def distill() -> list[DistillateRow]:
        rd, memory, edits, before = compute()
        return [*round_rows(ref, rd, before), distillate(ref, STATE, round_index, {**state_body(rd.state, memory, rd.stats, edits),
                                                                   "round": round_index})]

    once(ref, "distillates", "edit_round", key, distill)
    if run_config(ref).proposer == "llm":  # the answers stage 1 could not use
        once(ref, "candidates", "llm_unusable", key, unusable)
    decisions = once(ref, "gate_decisions", "gate", key, lambda: decision_rows(ref, round_index, compute()[0]))
    if decisions:
        state, *_ = previous(ref, round_index)
        once(ref, "registry", "register", key, lambda: registration(ref, decisions[0], state, round_index))
    verdict = decisions[0].decision if decisions else "none"
    reporter().advance(1, f"round {round_index}: {verdict}")
    return verdict


def decision_rows(ref: RunRef, round_index: int, rd: Round) -> list[GateDecisionRow]:
    if rd.outcome is None:
        return []
    before, _, _, _ = previous(ref, round_index - 1)
    baseline, candidate = publish_state(ref, before, round_index - 1), publish_state(ref, rd.edit.state, round_index)
    return [decision_row(ref, round_index, candidate, "validation_improves", baseline, rd.outcome,
                         id_parts=(candidate, "moscopt", round_index))]


@task(name="summarize")
def moscopt_summary(ref: RunRef) -> dict[str, object]:
    """Seed vs final champion (select and holdout) and the edit counts by stage."""
    store = store_for(ref.store_uri)
    registry = sorted(store.read_rows("registry", ref.run_id), key=lambda r: r.version)
    edits = distilled(ref, "moscopt_edits")
    first, last = (registry[0], registry[-1]) if registry else (None, None)
    return {
        "run_id": ref.run_id, "suite": "toolsim", "metric": "success",
        "candidate_id": last.candidate_id if last else None,
        "seed_select_success": first.select_score if first else None, "select_success": last.select_score if last else None,
        "seed_holdout_success": first.holdout_score if first else None, "holdout_score": last.holdout_score if last else None,
        "accepted": sum(e["accepted"] for e in edits), "rejected": sum(not e["accepted"] for e in edits),
        "accepted_by_stage": {str(s): sum(e["accepted"] for e in edits if e["stage"] == s) for s in (0, 1, 2, 3)},
    }
