"""RSIAgent's preparation stages at their Prefect boundaries: the starting memory
(sample, round 0), the curriculum's plan (sample), practice attempts under the current
memory (execute + the verifier's verdict) and the memory writer's verified recoveries
(distill: a new memory version, a candidate whose id is its content hash).

Only train cases are read here (``practice_sources``): the target split is never an
input while the memory is built. Every stage publishes its parts once
(`tasks.runtime.parts.once`), keyed by stage and round, so a rerun writes nothing new.

Tables (``schemas/rsiagent.py``): ``rsa_practice``, ``rsa_runs`` (attempts and recovery
re-runs), ``rsa_memory`` (the entries of every new version), ``candidates`` (every memory
version), ``steps`` (the attempts' trajectories)."""

from __future__ import annotations

import json
import random

from prefect import task

from schemas.ids import derived_id, seed_for
from schemas.loops import RSIAgentRun
from schemas.rows import CandidateRow, StepRow
from schemas.rsiagent import RSAMemoryRow, RSAPracticeRow, RSARunRow
from suites.base import Case
from tasks.harness_loops.llm_edit import unusable_row
from tasks.loops.rsiagent.curriculum import Cell, breadth_plan, cell_key, cell_stats, cells, depth_plan
from tasks.loops.rsiagent.llm import llm_writer
from tasks.loops.rsiagent.memory import Entry, entries_of, harness_of, memory_bytes, memory_id, revise
from tasks.loops.rsiagent.practice import execute, practice_case, recover, rule_writer, verify
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import latest_champion

MEMORY_NAME = "toolsim/rsiagent"
"""The registry name of the current memory (global to the store)."""
PRACTICE_SPLIT = "train"


def config_of(ref: RunRef) -> RSIAgentRun:
    return run_config(ref)


def round_key(round_index: int) -> str:
    return f"r{round_index:03d}"


def phase_of(config: RSIAgentRun, round_index: int) -> str:
    return "breadth" if round_index < config.rsiagent.breadth_rounds else "depth"


def practice_sources(ref: RunRef) -> dict[str, Case]:
    """The train cases practice may be built from, by id (no other split)."""
    return {c.case_id: c for c in cases_by_split(run_suite(ref), PRACTICE_SPLIT)}


def memory_of(ref: RunRef, mem_id: str) -> list[Entry]:
    return entries_of(json.loads(store_for(ref.store_uri).get_blob(mem_id)))


def publish_memory(ref: RunRef, stage: str, key: str, entries, round_index: int, parents: list[str],
                   operator: str, summary: str) -> str:
    """A memory version as a candidate (id = sha256 of its blob), once per part."""
    store = store_for(ref.store_uri)
    blob = store.put_blob(memory_bytes(entries))
    once(ref, "candidates", stage, key, lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=parents, operator=operator,
        proposer=config_of(ref).proposer if operator == "distill" else "fixed", artifact_kind="memory",
        artifact_uri=store.blob_uri(blob), island=-1, summary=summary)])
    return blob


@task(name="sample_start", **STAGE_OPTIONS)
def start_memory(ref: RunRef) -> str:
    """sample (round 0): the store's current memory (champion of ``toolsim/rsiagent`` from
    an earlier run), else the empty memory, as the run's first candidate."""
    store = store_for(ref.store_uri)
    champion = latest_champion(store.read_rows("registry"), MEMORY_NAME, ref.run_id)
    entries = memory_of(ref, champion.candidate_id) if champion else []
    origin = f"champion of {MEMORY_NAME} from run {champion.run_id}" if champion else "empty memory"
    return publish_memory(ref, "sample", "start", entries, 0, [], "start", f"{origin}: {len(entries)} entries")


def _history(ref: RunRef, before: int) -> list[tuple[Cell, bool, str | None]]:
    store = store_for(ref.store_uri)
    tasks = {p.task_id: p for p in store.read_rows("rsa_practice", ref.run_id) if p.round < before}
    runs = sorted((r for r in store.read_rows("rsa_runs", ref.run_id) if r.role == "attempt" and r.task_id in tasks),
                  key=lambda r: (r.round, r.id))
    return [(tuple(tasks[r.task_id].cell.split("|")), r.verdict, r.failure_cause) for r in runs]


@task(name="sample", **STAGE_OPTIONS)
def plan_practice(ref: RunRef, round_index: int) -> int:
    """sample: the curriculum agent's practice tasks of the round (breadth or depth)."""
    config, section = config_of(ref), config_of(ref).rsiagent
    sources = practice_sources(ref)
    by_template: dict[str, list[str]] = {}
    for case in sources.values():
        by_template.setdefault(case.payload["template"], []).append(case.case_id)
    grid, phase = cells(by_template, section.params_per_template, section.events), phase_of(config, round_index)

    def rows() -> list[RSAPracticeRow]:
        history = _history(ref, round_index)
        if phase == "breadth":
            visits: dict[Cell, int] = {}
            for cell, _, _ in history:
                visits[cell] = visits.get(cell, 0) + 1
            plan = breadth_plan(grid, visits, section.tasks_per_round, config.workers,
                                random.Random(seed_for(config.seed, "breadth", round_index)))
        else:
            plan = depth_plan(grid, cell_stats(history), section.tasks_per_round, config.workers,
                              section.novelty_bonus, section.explore)
        out = []
        for slot, (cell, worker) in enumerate(plan):
            noise = seed_for(config.seed, "practice", round_index, slot, cell_key(cell))
            spec = {"cell": list(cell), "source_case": cell[1], "worker": worker, "noise_seed": noise}
            out.append(RSAPracticeRow(run_id=ref.run_id, task_id=derived_id(ref.run_id, round_index, slot),
                                      round=round_index, phase=phase, template=cell[0], cell=cell_key(cell),
                                      source_case=cell[1], worker=worker, spec=json.dumps(spec, sort_keys=True)))
        return out

    return len(once(ref, "rsa_practice", "sample", round_key(round_index), rows))


def practice_tasks(ref: RunRef, round_index: int) -> list[tuple[RSAPracticeRow, Case]]:
    sources = practice_sources(ref)
    rows = store_for(ref.store_uri).read_part("rsa_practice", ref.run_id, "sample", round_key(round_index))
    out = []
    for row in sorted(rows, key=lambda r: r.task_id):
        spec = json.loads(row.spec)
        out.append((row, practice_case(sources[row.source_case], spec["cell"][2], spec["noise_seed"])))
    return out


def _run_row(ref: RunRef, run_id: str, task_id: str, round_index: int, role: str, mem_ver: str, harness,
             verdict) -> RSARunRow:
    return RSARunRow(run_id=ref.run_id, id=run_id, task_id=task_id, round=round_index, role=role, mem_ver=mem_ver,
                     code=json.dumps(harness, sort_keys=True), artifact_ref=run_id, verdict=verdict.passed,
                     failure_cause=verdict.cause, progress=verdict.progress)


@task(name="execute", **STAGE_OPTIONS)
def execute_practice(ref: RunRef, round_index: int, mem_id: str) -> int:
    """execute + verify: every practice task of the round under memory ``mem_id``."""
    harness, key = harness_of(memory_of(ref, mem_id)), round_key(round_index)
    runs = []
    for row, case in practice_tasks(ref, round_index):
        episode = execute(case, harness)
        runs.append((row, derived_id(ref.run_id, row.task_id, "attempt"), episode, verify(case, episode)))
    once(ref, "steps", "execute", key, lambda: [StepRow(run_id=ref.run_id, execution_id=rid, **step)
                                                  for _, rid, episode, _ in runs for step in episode.steps])
    rows = once(ref, "rsa_runs", "execute", key, lambda: [
        _run_row(ref, rid, row.task_id, round_index, "attempt", mem_id, harness, verdict)
        for row, rid, _, verdict in runs])
    return sum(not r.verdict for r in rows)


@task(name="distill", **STAGE_OPTIONS)
def distill_memory(ref: RunRef, round_index: int, mem_id: str) -> str:
    """distill: the memory writer's recoveries of the round's failed attempts, in task
    order, each re-run (its trajectory in ``steps``) and verified; the verified ones
    revise the memory. Returns the new
    version's id (``mem_id`` itself when nothing was verified)."""
    config, key = config_of(ref), round_key(round_index)
    writer = llm_writer(config.evolve) if config.proposer == "llm" else rule_writer
    attempts = {r.task_id: r for r in store_for(ref.store_uri).read_part("rsa_runs", ref.run_id, "execute", key)}
    memory, runs, steps = memory_of(ref, mem_id), [], []
    rng = random.Random(seed_for(config.seed, "distill", round_index))
    start = list(memory)
    for row, case in practice_tasks(ref, round_index):
        attempt = attempts[row.task_id]
        if attempt.verdict:
            continue
        failed = verify(case, execute(case, harness_of(memory)))  # this round's earlier recoveries may fix it
        if failed.passed:
            continue
        rec = recover(case, memory, failed, attempt.id, config.rsiagent.max_entries, writer, rng)
        if rec is None:
            continue
        rid = derived_id(ref.run_id, row.task_id, "recovery")
        steps += [StepRow(run_id=ref.run_id, execution_id=rid, **step) for step in rec.episode.steps]
        runs.append(_run_row(ref, rid, row.task_id, round_index, "recovery",
                             memory_id(rec.memory), harness_of(rec.memory), rec.verdict))
        if rec.verdict.passed:
            memory = revise(memory, [*rec.entries], config.rsiagent.max_entries)
    once(ref, "steps", "distill", key, lambda: steps)
    once(ref, "rsa_runs", "distill", key, lambda: runs)
    refused = {r.candidate_id: r for r in (unusable_row(ref, round_index, mem_id, why)
                                           for why in getattr(writer, "refused", []))}
    once(ref, "candidates", "distill_unusable", key, lambda: list(refused.values()))
    reporter().advance(1, f"round {round_index}")
    if memory == start:
        return mem_id
    new = publish_memory(ref, "distill", key, memory, round_index + 1, [mem_id], "distill",
                         f"round {round_index} ({phase_of(config, round_index)}): {len(memory)} entries, "
                         f"{sum(r.verdict for r in runs)} of {len(runs)} recoveries verified")
    once(ref, "rsa_memory", "distill", key, lambda: [
        RSAMemoryRow(run_id=ref.run_id, entry_id=e.entry_id, ver=new, condition=json.dumps(dict(e.condition)),
                     action_script=json.dumps(dict(e.action), sort_keys=True), consequence=e.consequence,
                     source_runs=list(e.source_runs)) for e in memory])
    return new
