"""Stage tasks of the graphskillevo loop, first half: plant (the seed skill, generation
0), run_batch (execute + score: every member on the generation's training batch),
distill (at most ``max_failures`` failed trajectories per member) and propose (sample:
mutation and crossover offspring, each checked for validity at once).

Tables (``schemas/graphskillevo.py``): ``gse_skills`` (every proposed skill, valid or
not, with its reason), ``gse_train_runs`` (member x batch task, which failures were fed
back; the trajectory is the ``steps`` rows of its ``execution_id``). A skill runs as its compiled harness program (a ``candidates`` row whose id is
the program's sha256); two skills that compile to the same harness share a candidate
and so its executions. Every stage publishes parts keyed by generation (``gNNNN``), so
a rerun or a resume writes nothing new."""

from __future__ import annotations

import json
import random
from typing import Container, Sequence

from prefect import task

from schemas.graphskillevo import GSESkillRow, GSETrainRunRow
from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, ExecutionRow
from suites.base import Case
from tasks.harness_loops.documents import harness_source, literal_document
from tasks.harness_loops.episodes import case_index, episode_of, run_missing
from tasks.harness_loops.llm_edit import NoLLMEdit, unusable_row
from tasks.harness_loops.seed import publish_seed
from tasks.loops.graphskillevo.graph import canonical, compile_harness, from_harness, invalid_reason, skill_id
from tasks.loops.graphskillevo.llm import llm_crossover, llm_mutate
from tasks.loops.graphskillevo.operators import CROSSOVER, Offspring, batch_of, crossover, mutate, operator_for
from tasks.proposers.llm import call_cost
from tasks.proposers.rule_evidence import Trace, trace_of
from tasks.proposers.rules import RuleProposer
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

STAGE = "gse"


def gen_key(gen: int) -> str:
    return f"g{gen:04d}"


# -- reading the run -------------------------------------------------------------------


def skills(ref: RunRef) -> dict[str, GSESkillRow]:
    return {r.skill_id: r for r in store_for(ref.store_uri).read_rows("gse_skills", ref.run_id)}


def skill_doc(row: GSESkillRow) -> dict:
    return {"principles": json.loads(row.principles_json), "graph": json.loads(row.graph_json)}


def population(ref: RunRef, gen: int) -> list[str]:
    """The members after generation ``gen``, best first."""
    rows = store_for(ref.store_uri).read_part("gse_population", ref.run_id, "gate", gen_key(gen))
    return [r.skill_id for r in sorted(rows, key=lambda r: r.rank)]


def successes(ref: RunRef, candidate_id: str, case_ids: Sequence[str]) -> dict[str, float]:
    wanted = set(case_ids)
    return {s.case_id: s.value for s in store_for(ref.store_uri).read_rows("scores", ref.run_id)
            if s.candidate_id == candidate_id and s.metric == "success" and s.case_id in wanted}


def executions(ref: RunRef, candidate_id: str, case_ids: Sequence[str]) -> dict[str, ExecutionRow]:
    wanted = set(case_ids)
    return {e.case_id: e for e in store_for(ref.store_uri).read_rows("executions", ref.run_id)
            if e.candidate_id == candidate_id and e.case_id in wanted}


def trace_for(ref: RunRef, execution: ExecutionRow) -> Trace | None:
    if execution.status != "ok" or not execution.output_uri:
        return None
    payload = case_index(ref)[execution.case_id].payload
    return trace_of(execution.case_id, payload, episode_of(ref, execution.case_id, execution.output_uri))


def train_stream(ref: RunRef) -> list[Case]:
    """The train split in a seeded order (split seed = the run's seed), so a batch mixes templates."""
    seed = run_config(ref).seed
    return sorted((c for c in case_index(ref).values() if c.split == "train"),
                  key=lambda c: derived_id(seed, "stream", c.case_id))


def batch(ref: RunRef, gen: int) -> list[Case]:
    stream = train_stream(ref)
    index = {c.case_id: c for c in stream}
    return [index[c] for c in batch_of([c.case_id for c in stream], gen, run_config(ref).graphskillevo.batch)]


# -- skill rows ------------------------------------------------------------------------


def skill_row(ref: RunRef, gen: int, offspring: Offspring, candidate_id: str | None = None,
              slot: int | None = None) -> GSESkillRow:
    """The offspring's ``gse_skills`` row after the validity check. An answer that held no
    skill is keyed by its generation and slot too, so two such answers with the same
    reason are two rows, not one."""
    skill = offspring.skill
    reason = offspring.rationale if skill is None else invalid_reason(skill)
    text = canonical(skill) if skill is not None else canonical({"answer": offspring.rationale, "gen": gen,
                                                                  "slot": slot})
    principles = skill.get("principles", []) if isinstance(skill, dict) else []
    graph = skill.get("graph", {}) if isinstance(skill, dict) else {}
    if reason is None and candidate_id is None:
        candidate_id = content_id(harness_source(compile_harness(skill)))
    return GSESkillRow(
        run_id=ref.run_id, skill_id=skill_id(skill) if skill is not None else content_id(text), gen=gen,
        parents=list(offspring.parents), op=offspring.op, principles_json=json.dumps(principles, sort_keys=True),
        graph_json=json.dumps(graph, sort_keys=True), valid=reason is None, reason=reason,
        candidate_id=candidate_id if reason is None else None, rationale=offspring.rationale[:2000],
    )


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Generation 0: the seed harness (or the store's champion) read as a skill."""
    candidate = publish_seed(ref, STAGE, gen_key(0), "the seed skill: default plans, no principles")
    program = store_for(ref.store_uri).get_blob(candidate).decode()
    seed = Offspring(from_harness(literal_document(program)), "seed", (), "the run's round-0 harness as a skill")
    return once(ref, "gse_skills", STAGE, gen_key(0), lambda: [skill_row(ref, 0, seed, candidate)])[0].skill_id


@task(name="run_batch", **STAGE_OPTIONS)
def run_batch(ref: RunRef, gen: int) -> list[str]:
    """execute + score: every member of the population runs the generation's batch
    (paired: same tasks, same noise); returns the members."""
    members, held = population(ref, gen - 1), skills(ref)
    cases = batch(ref, gen)
    for member in members:
        run_missing(ref, f"train-{gen_key(gen)}", held[member].candidate_id, cases)
    reporter().advance(1, f"generation {gen}: {len(members)} members on {len(cases)} tasks")
    return members


def train_rows(ref: RunRef, gen: int) -> list[GSETrainRunRow]:
    """Per member and batch task: success, the trajectory, and whether it is one of the
    member's first ``max_failures`` failures in the batch's order (fed back)."""
    cap, held, cases = run_config(ref).graphskillevo.max_failures, skills(ref), batch(ref, gen)
    rows = []
    for member in population(ref, gen - 1):
        candidate = held[member].candidate_id
        got, runs, fed = successes(ref, candidate, [c.case_id for c in cases]), executions(
            ref, candidate, [c.case_id for c in cases]), 0
        for case in cases:
            failed = got.get(case.case_id, 0.0) < 1.0
            feedback = failed and fed < cap and case.case_id in runs
            fed += feedback
            run = runs.get(case.case_id)
            rows.append(GSETrainRunRow(run_id=ref.run_id, gen=gen, skill_id=member, task_id=case.case_id,
                                       success=not failed, execution_id=run.execution_id if run else "",
                                       traj_uri=run.trajectory_uri if run else None, feedback=feedback))
    return rows


@task(name="distill", **STAGE_OPTIONS)
def distill(ref: RunRef, gen: int) -> int:
    """distill: keep only failed trajectories, at most ``max_failures`` per member;
    returns how many were kept."""
    return sum(r.feedback for r in once(ref, "gse_train_runs", STAGE, gen_key(gen), lambda: train_rows(ref, gen)))


def feedback(ref: RunRef, gen: int, member: str) -> tuple[list[Trace], list[Trace]]:
    """(the member's fed-back failures, its batch successes) as proposer evidence."""
    rows = [r for r in store_for(ref.store_uri).read_part("gse_train_runs", ref.run_id, STAGE, gen_key(gen))
            if r.skill_id == member]
    runs = executions(ref, skills(ref)[member].candidate_id, [r.task_id for r in rows])
    failures = [trace_for(ref, runs[r.task_id]) for r in rows if r.feedback]
    wins = [trace_for(ref, runs[r.task_id]) for r in rows if r.success and r.task_id in runs]
    return [t for t in failures if t], [t for t in wins if t]


def offspring_of(ref: RunRef, gen: int, slot: int, members: Sequence[str], rng: random.Random,
                 known: Container[str]):
    """(offspring or None, the llm call or None) of one slot, by the frozen rotation."""
    config, held = run_config(ref), skills(ref)
    op = operator_for(gen, slot, config.graphskillevo.operators, len(members))
    a = members[slot % len(members)]
    if op == CROSSOVER:
        b = members[(slot + 1) % len(members)]
        if config.proposer == "llm":
            score = store_for(ref.store_uri).read_rows("gse_val_scores", ref.run_id)
            b_score = next((s.val_success for s in score if s.skill_id == b), 0.0)
            return llm_crossover(skill_doc(held[a]), a, skill_doc(held[b]), b, b_score, config.evolve, rng)
        return crossover(skill_doc(held[a]), a, skill_doc(held[b]), b, rng), None
    failures, wins = feedback(ref, gen, a)
    if config.proposer == "llm":
        return llm_mutate(skill_doc(held[a]), a, failures, config.evolve, rng)
    return mutate(skill_doc(held[a]), a, failures, wins, rng, known), None


def proposal_rows(ref: RunRef, gen: int) -> tuple[list[GSESkillRow], list[CandidateRow]]:
    """Every new offspring's skill row and, for valid ones with a new harness, its candidate;
    an llm answer that gave no valid skill is an ``llm_unusable`` candidate (never run)."""
    config, known = run_config(ref), skills(ref)
    store, suite = store_for(ref.store_uri), run_suite(ref)
    members = population(ref, gen - 1)
    candidates = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}
    rows, new = [], []
    for slot in range(config.graphskillevo.offspring):
        rng = random.Random(seed_for(config.seed, "propose", gen, slot))
        child, call = offspring_of(ref, gen, slot, members, rng, known)
        if child is None:
            continue
        row = skill_row(ref, gen, child, slot=slot)
        if call is not None and (not row.valid or row.skill_id in known):  # the call's cost and raw answer
            why = row.reason if not row.valid else "the llm's answer repeats an existing skill"
            parent = known[child.parents[0]].candidate_id or child.parents[0]
            unusable = unusable_row(ref, gen, parent, NoLLMEdit(why or "", call))
            if unusable.candidate_id not in candidates:
                candidates.add(unusable.candidate_id)
                new.append(unusable)
        if row.skill_id in known:
            continue  # an existing skill is no new offspring
        known[row.skill_id] = row
        rows.append(row)
        if row.valid and row.candidate_id not in candidates:
            candidates.add(row.candidate_id)
            blob = store.put_blob(harness_source(compile_harness(child.skill)).encode())
            new.append(CandidateRow(
                run_id=ref.run_id, candidate_id=blob, round=gen, parent_ids=[known[p].candidate_id or p
                                                                             for p in child.parents],
                operator=child.op, proposer="llm" if call is not None else RuleProposer.name,
                artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(blob), island=-1,
                summary=f"skill {row.skill_id[:12]}: {child.rationale}"[:2000], **call_cost(call)))
    return rows, new


@task(name="propose", **STAGE_OPTIONS)
def propose(ref: RunRef, gen: int) -> list[str]:
    """sample: ``offspring`` children by the operator rotation, each checked for validity
    before anything runs (an invalid one is a ``gse_skills`` row with its reason);
    returns the new skills' ids."""
    store, key = store_for(ref.store_uri), gen_key(gen)
    if not store.has_part("gse_skills", ref.run_id, STAGE, key):
        rows, new = proposal_rows(ref, gen)
        store.write_part("candidates", ref.run_id, STAGE, key, new)
        store.write_part("gse_skills", ref.run_id, STAGE, key, rows)
    return [r.skill_id for r in store.read_part("gse_skills", ref.run_id, STAGE, key)]
