"""MACE's co-learning stages at their Prefect boundaries: the starting memory (sample,
round 0: the champion, else units mined from the seed harness's logs on train requests),
the roles' injections (sample), the requests under them (execute + score) and the
feedback update with newly mined units (distill: a new memory version, a candidate whose
id is its content hash).

Only train cases are read here; the gate reads select, the end test reads test. Every
stage publishes its parts once (`tasks.runtime.parts.once`), keyed by stage and round, so
a rerun writes nothing new.

Tables (``schemas/mace.py``): ``mace_injections``, ``mace_outputs``, ``mace_runs``,
``mace_units`` and ``mace_relations`` (every version's MemGoG), ``candidates`` (every
memory version), ``steps`` (the requests' trajectories)."""

from __future__ import annotations

import json
import random

from prefect import task

from schemas.ids import derived_id, seed_for
from schemas.loops import MaceRun
from schemas.mace import MaceInjectionRow, MaceOutputRow, MaceRelationRow, MaceRunRow, MaceUnitRow
from schemas.rows import CandidateRow, StepRow
from suites.base import Case
from tasks.harness_loops.llm_edit import NoLLMEdit, unusable_row
from tasks.loops.mace.memory import ROLES, Memory, add_units, memory_of, mine_units
from tasks.loops.mace.llm import llm_units
from tasks.loops.mace.practice import Miner, role_outputs, run_request, seed_memory
from tasks.loops.mace.selector import Injection, Limits, select, update
from tasks.proposers.rule_evidence import trace_of
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import run_start

TRAIN_SPLIT = "train"


def config_of(ref: RunRef) -> MaceRun:
    return run_config(ref)


def limits_of(config: MaceRun) -> Limits:
    m = config.mace
    return Limits(m.inject_budget, m.max_sets, m.risk_floor, m.min_obs, m.conflict_margin)


def miner_of(config: MaceRun, *stream: object, refused: list[NoLLMEdit] | None = None) -> Miner:
    """The unit miner: the rule proposer's (offline default), or the chat endpoint's (the
    answers that gave no unit appended to ``refused``)."""
    if config.proposer != "llm":
        return mine_units
    rng = random.Random(seed_for(config.seed, "mine", *stream))
    return lambda traces: llm_units(traces, config.evolve, rng, refused)


def record_refused(ref: RunRef, key: str, round_index: int, parent: str, refused: list[NoLLMEdit]) -> None:
    """The miner's unusable answers as ``llm_unusable`` candidates (never run), under `proposer: llm`."""
    if config_of(ref).proposer == "llm":
        rows = {r.candidate_id: r for r in (unusable_row(ref, round_index, parent, why) for why in refused)}
        once(ref, "candidates", "llm_unusable", key, lambda: list(rows.values()))


def round_key(round_index: int) -> str:
    return f"r{round_index:03d}"


def memory_at(ref: RunRef, mem_id: str) -> Memory:
    return memory_of(json.loads(store_for(ref.store_uri).get_blob(mem_id)))


def train_cases(ref: RunRef) -> dict[str, Case]:
    return {c.case_id: c for c in cases_by_split(run_suite(ref), TRAIN_SPLIT)}


def publish_memory(ref: RunRef, stage: str, key: str, memory: Memory, round_index: int, parents: list[str],
                   operator: str, summary: str) -> str:
    """A memory version as a candidate (id = sha256 of its blob) with its units and
    relations, once per part."""
    store = store_for(ref.store_uri)
    ver = store.put_blob(memory.to_bytes())
    once(ref, "candidates", stage, key, lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=ver, round=round_index, parent_ids=parents, operator=operator,
        proposer="llm" if config_of(ref).proposer == "llm" else "rules", artifact_kind="memory",
        artifact_uri=store.blob_uri(ver), island=-1, summary=summary)])
    once(ref, "mace_units", stage, key, lambda: [
        MaceUnitRow(run_id=ref.run_id, ver=ver, unit_id=u.unit_id, role=u.role, condition=u.condition,
                    action=json.dumps(dict(u.item), sort_keys=True), output=u.output, templates=list(u.templates),
                    utility=memory.utility[u.unit_id], n_obs=memory.n_obs.get(u.unit_id, 0))
        for u in sorted(memory.units.values(), key=lambda u: u.unit_id)])
    once(ref, "mace_relations", stage, key, lambda: [
        MaceRelationRow(run_id=ref.run_id, ver=ver, src=k.split("|")[0], dst=k.split("|")[1], type=k.split("|")[2],
                        weight=w) for k, w in sorted(memory.relations.items())])
    return ver


def _seed_logs(ref: RunRef) -> tuple[list[MaceRunRow], Memory]:
    """The past logs (the seed harness on every train request) and the units they yield."""
    config, refused = config_of(ref), []
    logs, memory = seed_memory(list(train_cases(ref).values()), config.mace.max_units,
                               miner_of(config, "start", refused=refused))
    record_refused(ref, "start", 0, Memory().memory_id, refused)
    rows = [MaceRunRow(run_id=ref.run_id, episode_id=derived_id(ref.run_id, "log", a.case.case_id), round=-1,
                       phase="log", arm="seed", bench="toolsim", task_id=a.case.case_id, mem_ver="", result=a.result)
            for a in logs]
    return rows, memory


@task(name="sample_start", **STAGE_OPTIONS)
def start_memory(ref: RunRef) -> str:
    """sample (round 0): the champion memory of an earlier run (``start_from:
    champion``), else MemGoG mined from the seed harness's logs on the train requests."""
    start = run_start(ref)
    if start is not None:
        return publish_memory(ref, "sample", "start", memory_at(ref, start.candidate_id), 0, [start.candidate_id],
                              "start", f"the champion memory of run {start.run_id}")
    logs, memory = _seed_logs(ref)
    once(ref, "mace_runs", "sample", "logs", lambda: logs)
    return publish_memory(ref, "sample", "start", memory, 0, [], "start",
                          f"{len(memory.units)} units mined from {len(logs)} seed-harness logs")


@task(name="sample", **STAGE_OPTIONS)
def sample_injections(ref: RunRef, round_index: int, mem_id: str) -> int:
    """sample: the round's train requests (seeded) and every role's (set, form) injection."""
    config = config_of(ref)
    memory, limits, cases = memory_at(ref, mem_id), limits_of(config), sorted(train_cases(ref))

    def rows() -> list[MaceInjectionRow]:
        order = random.Random(seed_for(config.seed, "batch", round_index))
        rng = random.Random(seed_for(config.seed, "select", round_index))
        out = []
        for case_id in order.sample(cases, min(config.mace.batch, len(cases))):
            template = train_cases(ref)[case_id].payload["template"]
            episode = derived_id(ref.run_id, round_index, case_id)
            for inj in select(memory, template, config.mace.selector, limits, rng):
                out.append(MaceInjectionRow(
                    run_id=ref.run_id, episode_id=episode, round=round_index, task_id=case_id, agent_role=inj.role,
                    stage=ROLES.index(inj.role), need=template, unit_ids=list(inj.units), form=inj.form,
                    budget=limits.budget, selector=config.mace.selector, mem_ver=mem_id))
        return out

    return len(once(ref, "mace_injections", "sample", round_key(round_index), rows))


def planned(ref: RunRef, round_index: int) -> list[tuple[str, str, list[Injection]]]:
    """(episode id, case id, injections in role order) of the round, in sampled order."""
    rows = store_for(ref.store_uri).read_part("mace_injections", ref.run_id, "sample", round_key(round_index))
    by_episode: dict[str, list[MaceInjectionRow]] = {}
    for row in rows:
        by_episode.setdefault(row.episode_id, []).append(row)
    out = []
    for episode, mine in by_episode.items():
        mine.sort(key=lambda r: r.stage)
        out.append((episode, mine[0].task_id, [Injection(r.agent_role, tuple(r.unit_ids), r.form) for r in mine]))
    return out


@task(name="execute", **STAGE_OPTIONS)
def execute_requests(ref: RunRef, round_index: int, mem_id: str) -> float:
    """execute + score: every request of the round under its injections; returns the
    round's success rate."""
    store, key = store_for(ref.store_uri), round_key(round_index)
    memory, cases = memory_at(ref, mem_id), train_cases(ref)
    runs = [(eid, cid, run_request(cases[cid], memory, injections))
            for eid, cid, injections in planned(ref, round_index)]

    def outputs() -> list[MaceOutputRow]:
        out = []
        for eid, _, episode in runs:
            for role, steps in role_outputs(episode).items():
                blob = store.put_blob(json.dumps(steps, sort_keys=True).encode())
                out.append(MaceOutputRow(run_id=ref.run_id, episode_id=eid, agent_role=role,
                                         output_uri=store.blob_uri(blob), n_steps=len(steps)))
        return out

    once(ref, "steps", "execute", key, lambda: [StepRow(run_id=ref.run_id, execution_id=eid, **step)
                                                  for eid, _, episode in runs for step in episode.steps])
    once(ref, "mace_outputs", "execute", key, outputs)
    rows = once(ref, "mace_runs", "execute", key, lambda: [
        MaceRunRow(run_id=ref.run_id, episode_id=eid, round=round_index, phase="train",
                   arm=config_of(ref).mace.selector,
                   bench="toolsim", task_id=cid, mem_ver=mem_id, result=float(episode.evaluation.success))
        for eid, cid, episode in runs])
    return sum(r.result for r in rows) / max(len(rows), 1)


@task(name="distill", **STAGE_OPTIONS)
def distill_memory(ref: RunRef, round_index: int, mem_id: str) -> str:
    """distill: the logged injections and results update utilities, relations and the
    presentation statistics, and the round's logs yield new units; the new version's id."""
    config, key = config_of(ref), round_key(round_index)
    memory, cases = memory_at(ref, mem_id), train_cases(ref)
    executed = store_for(ref.store_uri).read_part("mace_runs", ref.run_id, "execute", key)
    results = {r.episode_id: r.result for r in executed}
    plan = planned(ref, round_index)
    updated = update(memory, [(injections, results[eid]) for eid, _, injections in plan], config.mace.smoothing)
    traces = [trace_of(cid, cases[cid].payload, run_request(cases[cid], memory, injections))
              for _, cid, injections in plan]
    refused: list[NoLLMEdit] = []
    new = add_units(updated, miner_of(config, round_index, refused=refused)(traces), config.mace.max_units)
    record_refused(ref, key, round_index, mem_id, refused)
    reporter().advance(1, f"round {round_index}")
    if new.memory_id == mem_id:
        return mem_id
    mean = sum(results.values()) / max(len(results), 1)
    return publish_memory(ref, "distill", key, new, round_index + 1, [mem_id], "distill",
                          f"round {round_index}: {len(new.units)} units ({len(new.units) - len(memory.units)} new), "
                          f"feedback of {len(plan)} requests (success {mean:.3f})")
