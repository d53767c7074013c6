"""limbo: learn online when reading past experience is worth the budget (LIMBO). The
agent and the arm definitions are frozen; what persists is the controller's per-arm
success and cost statistics and a capacity-limited memory of successful trajectories.

    arms <- memory mode {none, direct replay, compressed replay, retrieval}
            x budget {lean, full} (generation length, turns, tool-call cap)
    M <- empty memory; stats <- ridge priors of both heads, every arm
    for each request t of the stream (toolsim, injected failures), in blocks:
        sample:   read its features (template, prompt length, recent success and
                  cost, memory fill); the success and cost heads predict every arm,
                  plus an exploration bonus; pick the arm maximising
                  p + bonus - cost_weight * cost
        execute:  only the chosen arm runs the agent with its context and budget
        score:    success (the verifier) and cost (simulated tokens)
        distill:  a success becomes a trajectory entry
        in one transaction (per block):
            gate:     only successes enter M (oldest evicted past capacity);
                      every request's decision with its evidence
            register: update the chosen arm's statistics (inside play);
                      M is the champion of toolsim/limbo
    every fixed arm runs the same stream (paired per request), for the frontier
    register: the final M, stable, with its holdout success
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import LimboRun
from tasks.loops.limbo.gate import finish_stream, gate_block, limbo_summary, register_block
from tasks.loops.limbo.memory import memory_bytes
from tasks.loops.limbo.stages import blocks, play_block, publish_arms
from tasks.loops.limbo.stream import policy_name
from tasks.runtime.context import store_for
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: LimboRun) -> int:
    """Requests over every policy (the controller and each fixed arm)."""
    return config.budget * (1 + len(config.limbo.fixed_arms))


@flow(name="limbo", flow_run_name=flow_run_name)
def limbo(config: LimboRun, store_uri: str | None = None, run_id: str | None = None,
          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        publish_arms(ref)
        memory, state, states = store_for(ref.store_uri).put_blob(memory_bytes([])), None, {}
        for block in range(blocks(config)):
            state = play_block(ref, None, block, state)
            with transaction():
                memory = gate_block(ref, block, memory)
                register_block(ref, block)
        states["controller"] = state
        for arm in config.limbo.fixed_arms:
            fixed = None
            for block in range(blocks(config)):
                fixed = play_block(ref, arm, block, fixed)
            states[policy_name(arm)] = fixed
        with transaction():
            finish_stream(ref, states)
        summary = limbo_summary(ref)
    return summary
