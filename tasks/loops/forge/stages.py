"""FORGE's step stages at their Prefect boundaries: the start (prompt, empty failure
memory, the training set), the prompt in force on the step's training batch (execute +
score), the failure memory (distill: every imperfect trajectory abstracted into a mode)
and the reflected prompt (sample: the reflector's revision, run on the same batch).

The training set is the train split plus the synthetic instances the data gate admitted
(a version is a candidate: its id is the sha256 of its blob); the validation set is the
fixed select split and the held-out split is read only after the last step. Every stage
publishes its parts once (`tasks.runtime.parts.once`), keyed by stage and step, so a
rerun writes nothing new.

Tables (``schemas/forge.py``): ``fg_trajs``, ``fg_failure_modes``, ``candidates`` (every
prompt, memory and training-set version), ``steps`` (the trajectories)."""

from __future__ import annotations

import json
import random
from typing import Any, Mapping

from prefect import task

from schemas.forge import FGFailureModeRow, FGTrajRow
from schemas.ids import content_id, derived_id, seed_for
from schemas.loops import ForgeRun
from schemas.rows import CandidateRow, StepRow
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import harness_document
from tasks.harness_loops.llm_edit import is_unusable, unusable_row
from tasks.harness_loops.seed import publish_seed
from tasks.loops.forge.llm import llm_reflector
from tasks.loops.forge.modes import abstract, memory_bytes, memory_of
from tasks.loops.forge.prompt import batch_of, rule_reflector
from tasks.loops.forge.synth import run_trace
from tasks.proposers.rule_evidence import Trace
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.runtime.start import latest_champion

DATA_NAME = "toolsim/forge-data"
"""The registry name of the current training set (synthetic instances), global to the store."""
TRAIN, VALIDATION, HELDOUT = "train", "select", "holdout"


def config_of(ref: RunRef) -> ForgeRun:
    return run_config(ref)


def step_key(step: int) -> str:
    return f"s{step:03d}"


def harness_of(ref: RunRef, prompt_id: str) -> dict[str, Any]:
    return harness_document(ref, prompt_id)


def split_payloads(ref: RunRef, split: str) -> dict[str, dict[str, Any]]:
    return {c.case_id: c.payload for c in cases_by_split(run_suite(ref), split)}


def synthetic_of(ref: RunRef, data_id: str) -> dict[str, dict[str, Any]]:
    return {i["inst_id"]: i["payload"] for i in json.loads(store_for(ref.store_uri).get_blob(data_id))["synthetic"]}


def data_bytes(synthetic: Mapping[str, Mapping[str, Any]]) -> bytes:
    return json.dumps({"synthetic": [{"inst_id": k, "payload": synthetic[k]} for k in sorted(synthetic)]},
                      sort_keys=True).encode()


def training_set(ref: RunRef, data_id: str) -> dict[str, dict[str, Any]]:
    """Instance id -> payload: the train split plus the admitted synthetic instances."""
    return {**split_payloads(ref, TRAIN), **synthetic_of(ref, data_id)}


def scores_on(ref: RunRef, prompt_id: str, payloads: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    harness = harness_of(ref, prompt_id)
    return {i: float(run_trace(i, p, harness).success) for i, p in sorted(payloads.items())}


def publish(ref: RunRef, stage: str, key: str, blob: bytes, step: int, parents: list[str], operator: str,
            kind: str, summary: str, proposer: str = "fixed") -> str:
    """A version as a candidate (id = sha256 of its blob), once per part."""
    store = store_for(ref.store_uri)
    bid = store.put_blob(blob)
    once(ref, "candidates", stage, key, lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=bid, round=step, parent_ids=parents, operator=operator, proposer=proposer,
        artifact_kind=kind, artifact_uri=store.blob_uri(bid), island=-1, summary=summary)])
    return bid


@task(name="sample_start", **STAGE_OPTIONS)
def start(ref: RunRef) -> tuple[str, str, str]:
    """sample (step 0): (prompt, failure memory, training set). The prompt is the seed
    harness or, with ``start_from: champion``, the champion of ``toolsim/forge``; the
    training set continues from the champion of ``toolsim/forge-data`` likewise."""
    config, store = config_of(ref), store_for(ref.store_uri)
    prompt = publish_seed(ref, "sample", "start", "seed harness (no rules): the agent's default plans")
    held = latest_champion(store.read_rows("registry"), DATA_NAME, ref.run_id)
    synthetic = synthetic_of(ref, held.candidate_id) if held and config.start_from == "champion" else {}
    origin = f"champion of {DATA_NAME} from run {held.run_id}" if synthetic else "the train split"
    data = publish(ref, "sample", "start-data", data_bytes(synthetic), 0, [], "start", "training_set",
                   f"{origin}: {len(synthetic)} synthetic instances")
    memory = publish(ref, "sample", "start-memory", memory_bytes({}), 0, [], "start", "failure_memory",
                     "empty failure memory")
    return prompt, memory, data


def batch_payloads(ref: RunRef, step: int, data_id: str) -> dict[str, dict[str, Any]]:
    config, pool = config_of(ref), training_set(ref, data_id)
    ids = batch_of(list(pool), config.forge.batch_size, random.Random(seed_for(config.seed, "batch", step)))
    return {i: pool[i] for i in ids}


def run_batch(ref: RunRef, step: int, prompt_id: str, data_id: str, role: str) -> list[tuple[str, Trace]]:
    """(trajectory id, trace) of ``prompt_id`` on the step's batch, written once to
    ``fg_trajs`` and ``steps`` under ``role``."""
    harness, key, synthetic = harness_of(ref, prompt_id), f"{role}-{step_key(step)}", synthetic_of(ref, data_id)
    traces = [(derived_id(ref.run_id, step, role, prompt_id, i), run_trace(i, p, harness))
              for i, p in batch_payloads(ref, step, data_id).items()]
    once(ref, "steps", "execute", key, lambda: [StepRow(run_id=ref.run_id, execution_id=tid, **dict(s))
                                                  for tid, t in traces for s in t.steps])
    once(ref, "fg_trajs", "execute", key, lambda: [FGTrajRow(
        run_id=ref.run_id, id=tid, step=step, prompt_id=prompt_id, inst_id=t.case_id, role=role,
        score=float(t.success), perfect=t.success, synthetic=t.case_id in synthetic) for tid, t in traces])
    return traces


@task(name="execute", **STAGE_OPTIONS)
def execute_batch(ref: RunRef, step: int, prompt_id: str, data_id: str) -> int:
    """execute + score: the prompt in force on the step's training batch; returns the
    number of imperfect trajectories."""
    return sum(not t.success for _, t in run_batch(ref, step, prompt_id, data_id, "current"))


@task(name="distill", **STAGE_OPTIONS)
def distill_modes(ref: RunRef, step: int, prompt_id: str, data_id: str, memory_id: str) -> str:
    """distill (b): every imperfect trajectory of the step abstracted into a failure mode
    with its supporting trajectories; returns the new memory version (or ``memory_id``)."""
    memory = memory_of(store_for(ref.store_uri).get_blob(memory_id))
    traces = run_batch(ref, step, prompt_id, data_id, "current")
    new = abstract(memory, [(tid, t) for tid, t in traces if not t.success])
    if new == memory:
        return memory_id
    key = step_key(step)
    ver = publish(ref, "distill", key, memory_bytes(new), step, [memory_id], "abstract", "failure_memory",
                  f"step {step}: {len(new)} failure modes, {sum(len(m.support) for m in new.values())} trajectories")
    once(ref, "fg_failure_modes", "distill", key, lambda: [FGFailureModeRow(
        run_id=ref.run_id, id=m.mode_id, ver=ver, step=step, desc=m.desc, signature=json.dumps(list(m.signature)),
        support_traj_ids=list(m.support)) for m in new.values()])
    return ver


@task(name="sample", **STAGE_OPTIONS)
def reflect_prompt(ref: RunRef, step: int, prompt_id: str, data_id: str) -> str | None:
    """sample + distill (a): the reflector revises the prompt from the step's imperfect
    trajectories; the revision is run on the same batch. None: no revision proposed."""
    config, key = config_of(ref), step_key(step)
    traces = [t for _, t in run_batch(ref, step, prompt_id, data_id, "current")]
    if all(t.success for t in traces):
        return None
    done = store_for(ref.store_uri).has_part("candidates", ref.run_id, "sample", key)
    if done:
        rows = [r for r in store_for(ref.store_uri).read_part("candidates", ref.run_id, "sample", key)
                if not is_unusable(r)]
        candidate = rows[0].candidate_id if rows else None
    else:
        reflector = llm_reflector(config.evolve) if config.proposer == "llm" else rule_reflector
        revised = reflector(traces, harness_of(ref, prompt_id), random.Random(seed_for(config.seed, "reflect", step)))
        if revised is None or content_id(harness_source(revised)) == prompt_id:
            refused = [unusable_row(ref, step, prompt_id, why) for why in getattr(reflector, "refused", [])]
            once(ref, "candidates", "sample", key, lambda: refused)
            return None
        candidate = publish(ref, "sample", key, harness_source(revised).encode(), step, [prompt_id], "reflect",
                            run_suite(ref).artifact_kind, f"step {step}: reflected on "
                            f"{sum(not t.success for t in traces)} imperfect trajectories",
                            proposer="llm" if config.proposer == "llm" else "rules")
    if candidate is not None:
        run_batch(ref, step, candidate, data_id, "candidate")
    return candidate
