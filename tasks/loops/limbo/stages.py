"""LIMBO's stages at their Prefect boundaries. The stream is processed in blocks of
``limbo.block`` requests; inside a block every request is one full iteration (features,
choice, the chosen arm's run, score, memory admission, the chosen arm's update:
``stream.play``), since the next request's choice depends on this one's outcome.

- sample (once): the arms table.
- play (per policy and block): the block's requests under the controller or one fixed
  arm, from the state the previous block left (a blob: memory + controller statistics);
  writes ``limbo_stream`` (and the controller's trajectories to ``steps``) and returns
  the new state's blob id.

Every part is published once (``tasks.runtime.parts.once``), keyed by policy and block;
the state blob is content-addressed, so a rerun of a block recomputes the same state
and writes nothing new. Gate and register are in ``gate.py``."""

from __future__ import annotations

import json
from functools import lru_cache

from prefect import task

from schemas.ids import derived_id
from schemas.limbo import LimboArmRow, LimboStreamRow
from schemas.loops import LimboRun
from schemas.rows import StepRow
from tasks.harness_loops.llm_edit import unusable_row
from tasks.loops.limbo.agent import rule_repair
from tasks.loops.limbo.llm import llm_repairer
from tasks.loops.limbo.memory import ARMS, memory_bytes
from tasks.loops.limbo.stream import Request, Step, initial_state, play, policy_name, state_bytes, state_of, stream
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

STREAM_SPLIT = "train"
MODEL = "toolsim-procedural"


def config_of(ref: RunRef) -> LimboRun:
    return run_config(ref)


@lru_cache(maxsize=8)
def requests_of(ref: RunRef) -> tuple[Request, ...]:
    """The run's stream: ``budget`` requests from the train split (``stream.stream``)."""
    config = config_of(ref)
    return tuple(stream(cases_by_split(run_suite(ref), STREAM_SPLIT), config.budget, config.limbo.fault_rates,
                        config.seed))


def blocks(config: LimboRun) -> int:
    return -(-config.budget // config.limbo.block)


def block_key(arm: str | None, block: int) -> str:
    return f"{arm or 'controller'}-b{block:03d}"


def execution_id(ref: RunRef, arm: str | None, t: int) -> str:
    return derived_id(ref.run_id, policy_name(arm), t)


@task(name="sample", **STAGE_OPTIONS)
def publish_arms(ref: RunRef) -> int:
    """sample (once): the arm definitions (frozen)."""
    return len(once(ref, "limbo_arms", "sample", "arms", lambda: [
        LimboArmRow(run_id=ref.run_id, id=a.id, mode=a.mode, gen_len=a.gen_len, turns=a.turns,
                    tool_calls=a.tool_calls) for a in ARMS]))


def _stream_row(ref: RunRef, arm: str | None, step: Step) -> LimboStreamRow:
    config, c = config_of(ref), step.choice
    return LimboStreamRow(
        run_id=ref.run_id, policy=policy_name(arm), seed=config.seed, model=MODEL, env=config.suite, t=step.request.t,
        task_id=step.request.task_id, fault_rate=step.request.case.payload["fault_rate"],
        features=json.dumps([round(v, 6) for v in step.features]), arm=step.arm,
        p_pred=None if c is None else c.p_pred, cost_pred=None if c is None else c.cost_pred,
        bonus=None if c is None else c.bonus, success=step.outcome.success, turns_used=step.outcome.turns_used,
        tokens=step.outcome.tokens, cost=step.outcome.tokens / 1000.0, mem_ver=step.mem_ver,
        execution_id=step.execution_id)


@task(name="play", **STAGE_OPTIONS)
def play_block(ref: RunRef, arm: str | None, block: int, state_id: str | None) -> str:
    """sample + execute + score + distill for one block of one policy (module
    docstring); returns the state blob after the block."""
    config, store = config_of(ref), store_for(ref.store_uri)
    state = state_of(json.loads(store.get_blob(state_id)), config.limbo) if state_id else \
        initial_state(config.limbo, arm)
    size = config.limbo.block
    repairer = llm_repairer(config.evolve) if config.proposer == "llm" else rule_repair
    steps = play(requests_of(ref)[block * size:(block + 1) * size], arm, state, config.limbo, config.seed,
                 execution_id=lambda r: execution_id(ref, arm, r.t), repairer=repairer)
    key = block_key(arm, block)
    if config.proposer == "llm":  # the repair answers that gave no harness, with their calls
        seen = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}  # a fixed arm's same answer
        rows = {u.candidate_id: u for u in (unusable_row(ref, block, parent, why)
                                            for parent, why in getattr(repairer, "refused", []))
                if u.candidate_id not in seen}
        once(ref, "candidates", "llm_unusable", key, lambda: list(rows.values()))
    if arm is None:
        for step in steps:
            store.put_blob(memory_bytes(step.memory))
        once(ref, "steps", "play", key, lambda: [StepRow(run_id=ref.run_id, execution_id=s.execution_id, **row)
                                                 for s in steps for row in s.outcome.episode.steps])
    once(ref, "limbo_stream", "play", key, lambda: [_stream_row(ref, arm, s) for s in steps])
    reporter().advance(len(steps), f"{policy_name(arm)} block {block}")
    return store.put_blob(state_bytes(state))
