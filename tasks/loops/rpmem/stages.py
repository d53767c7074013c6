"""RPMem's sample and training stages at their Prefect boundaries: the select and holdout
users (sample: published as `cases`), the run's first memory system, and the two
training stages, each a chunk through the platform's GPU dispatch
(`tasks.training.placement.run_chunk`): stage 1 trains compiler + decoder, stage 2 the
merge gate only.

A memory system (compiler, gate, decoder: what writes and reads the fixed-size memory)
is a candidate whose id is the sha256 of its weights' bytes. Every chunk publishes its
candidate and one `train_steps` row per step keyed by the chunk, so a rerun reads them
back and trains nothing. Training users are drawn from their own seeded streams
(`train.compile`, `train.merge`): never a select or holdout user."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import torch
from prefect import task

from schemas.ids import seed_for
from schemas.loops import RPMemRun
from schemas.rows import CandidateRow, CaseRow, TrainStepRow
from tasks.loops.rpmem.model import BASES, RPMem, frozen_base, question_states
from tasks.loops.rpmem.sessions import Session, keys_of, user_id, user_sessions
from tasks.loops.rpmem.train import batch_users, compile_loss, from_bytes, merge_loss, to_bytes, train_steps
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.training.placement import chunk_key, run_chunk, worker_name
from tasks.training.policy import pin_cpu_threads

SUITE = "arith"
SCORER = "rpmem-exact-match-v1"
"""Recall: greedy exact match of a key's answer (a digit, or n for none)."""


def config_of(ref: RunRef) -> RPMemRun:
    return run_config(ref)


@dataclass(frozen=True)
class World:
    """What every stage of a run shares on one base: the keys, the frozen base and its
    hidden state after each question."""

    keys: str
    base: torch.nn.Module
    states: torch.Tensor


@lru_cache(maxsize=8)
def _world(seed: int, n_keys: int, base_name: str) -> World:
    keys = keys_of(n_keys)
    base = frozen_base(base_name, seed)
    return World(keys, base, question_states(base, keys))


def world(ref: RunRef, base_name: str | None = None) -> World:
    config = config_of(ref)
    return _world(config.seed, config.rpmem.n_keys, base_name or config.rpmem.base)


def users_of(ref: RunRef, split: str) -> list[list[Session]]:
    """The select or holdout users' sessions (each `eval_sessions` long)."""
    config, section = config_of(ref), config_of(ref).rpmem
    n = section.select_users if split == "select" else section.holdout_users
    return [user_sessions(config.seed, split, u, section.eval_sessions, section.updates, keys_of(section.n_keys),
                          section.p_delete) for u in range(n)]


@task(name="sample", **STAGE_OPTIONS)
def publish_users(ref: RunRef) -> int:
    """sample: the select and holdout users as cases (payload: their sessions in order)."""
    def rows() -> list[CaseRow]:
        return [CaseRow(run_id=ref.run_id, suite=SUITE, case_id=user_id(split, u), split=split,
                        payload_json=json.dumps([{"text": s.text, "state": dict(s.state)} for s in sessions]))
                for split in ("select", "holdout") for u, sessions in enumerate(users_of(ref, split))]
    return len(once(ref, "cases", "sample", "users", rows))


def meta_of(ref: RunRef, base_name: str) -> dict:
    section = config_of(ref).rpmem
    return {"d_mem": section.d_mem, "d_model": BASES[base_name], "rank": section.rank, "base": base_name}


def fresh_system(ref: RunRef, base_name: str, salt: str) -> RPMem:
    meta = meta_of(ref, base_name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_for(config_of(ref).seed, "rpmem", salt))
        return RPMem(meta["d_mem"], meta["d_model"], meta["rank"])


def publish_system(ref: RunRef, stage: str, key: str, model: RPMem, base_name: str, round_index: int,
                   parents: list[str], operator: str, summary: str) -> str:
    """A memory system as a candidate (id = sha256 of its bytes), once per part."""
    store = store_for(ref.store_uri)
    blob = store.put_blob(to_bytes(model, meta_of(ref, base_name)))
    once(ref, "candidates", stage, key, lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=parents, operator=operator,
        proposer="torch", artifact_kind="memory", artifact_uri=store.blob_uri(blob), island=-1, summary=summary)])
    return blob


def load_system(ref: RunRef, candidate_id: str) -> RPMem:
    return from_bytes(store_for(ref.store_uri).get_blob(candidate_id))[0]


@task(name="sample_start", **STAGE_OPTIONS)
def init_memory(ref: RunRef) -> str:
    """The run's first memory system: seeded, untrained (its decoder leaves the base as it is)."""
    base_name = config_of(ref).rpmem.base
    return publish_system(ref, "sample", "start", fresh_system(ref, base_name, "init"), base_name, 0, [], "init",
                          f"untrained memory system on base {base_name}")


def _train_rows(ref: RunRef, candidate_id: str, rows, samples: int) -> list[TrainStepRow]:
    return [TrainStepRow(run_id=ref.run_id, candidate_id=candidate_id, step=step, loss=loss, metrics={},
                         tokens=0, samples=samples, wall_s=wall, worker=worker_name(), device="cpu")
            for step, loss, wall in rows]


def _stage_chunk(ref: RunRef, chunk: int, first_step: int, n_steps: int, parent_id: str,
                 stage: str) -> tuple[str, str | None]:
    """`run_chunk`'s work for stage 1 ("compile") or 2 ("merge") of round `chunk`
    (idempotent: a published chunk is read back). Trains on CPU (the modules are tiny)."""
    store, key = store_for(ref.store_uri), chunk_key(chunk)
    if store.has_part("train_steps", ref.run_id, stage, key):
        return store.read_part("candidates", ref.run_id, stage, key)[0].candidate_id, None
    pin_cpu_threads()
    config, section = config_of(ref), config_of(ref).rpmem
    w, model = world(ref), load_system(ref, parent_id)
    if stage == "compile":
        params = [*model.compiler.parameters(), *model.decoder.parameters()]
        loss_of = lambda s: compile_loss(w.base, w.states, model, batch_users(  # noqa: E731
            config.seed, stage, s, section.batch, 1, section.updates, w.keys), w.keys)
    else:
        params = list(model.gate.parameters())
        loss_of = lambda s: merge_loss(w.base, w.states, model, batch_users(  # noqa: E731
            config.seed, stage, s, section.batch, section.train_sessions, section.updates, w.keys), w.keys)
    rows = train_steps(params, loss_of, first_step, n_steps, section.lr)
    what = "compiler + decoder" if stage == "compile" else "merge gate"
    blob = publish_system(ref, stage, key, model, section.base, chunk + 1, [parent_id], stage,
                          f"round {chunk}: {n_steps} stage-{1 if stage == 'compile' else 2} steps of the {what}, "
                          f"loss {rows[0][1]:.3f} -> {rows[-1][1]:.3f}")
    store.write_part("train_steps", ref.run_id, stage, key, _train_rows(ref, blob, rows, section.batch))
    return blob, f"round {chunk} {stage}, loss {rows[-1][1]:.3f}"


def _compile_work(ref, chunk, first_step, n_steps, parent_id):
    return _stage_chunk(ref, chunk, first_step, n_steps, parent_id, "compile")


def _merge_work(ref, chunk, first_step, n_steps, parent_id):
    return _stage_chunk(ref, chunk, first_step, n_steps, parent_id, "merge")


@task(name="train-compile", **STAGE_OPTIONS)
def train_compiler(ref: RunRef, round_index: int, parent_id: str) -> str:
    """Stage 1 of a round: compiler + decoder so the LoRA alone answers a session's
    questions; returns the new system's id (`parent_id` when the stage has no steps)."""
    n = config_of(ref).rpmem.compile_steps
    if n == 0:
        return parent_id
    return run_chunk(ref, "compile", round_index, round_index * n, n, _compile_work, parent_id)


@task(name="train-merge", **STAGE_OPTIONS)
def train_gate(ref: RunRef, round_index: int, parent_id: str) -> str:
    """Stage 2 of a round: the merge gate only, on sessions merged in time order."""
    n = config_of(ref).rpmem.merge_steps
    if n == 0:
        return parent_id
    return run_chunk(ref, "merge", round_index, round_index * n, n, _merge_work, parent_id)
