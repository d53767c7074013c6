"""rpmem: long-term recurrent parametric memory across sessions (RPMem) on arith
sessions of key-value updates. Base weights are frozen; a fixed-size memory state
persists across a user's sessions; answers use the LoRA decoded from it.

    S <- an untrained memory system (compiler, merge gate, decoder) on the base
    for round r = 0 .. R-1:
        stage 1:  train compiler + decoder: the base with the LoRA only (no session
                  text) answers a session's questions as a reader of it would
        stage 2:  train only the merge gate: sessions merged in time order, the
                  answers' loss after each                            -> S'
        in one transaction:
            gate:     S' against S on select users' recall (sessions 1..N, paired per
                      user, bootstrap CI): admitted iff the gain > min_gain
            register: an admitted S' becomes the champion of arith/rpmem: S <- S'
    execute:  per holdout user, per session in order: compile (forward only) ->
              latent; the gate reads the old memory and the latent and sets
              per-coordinate keep / write -> new memory of the same size; answer
              every key with the LoRA decoded from it
    register: freeze S (stable, champion) with its holdout recall
    swap:     on the other base, keep compiler + gate and train only a new decoder,
              against a system trained from scratch for the same steps
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import RPMemRun
from tasks.loops.rpmem.gate import freeze_memory, gate_memory, register_memory, write_memory
from tasks.loops.rpmem.stages import init_memory, publish_users, train_compiler, train_gate
from tasks.loops.rpmem.swap import rpmem_summary, swap_base
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: RPMemRun) -> int:
    """Optimizer steps a run makes, for progress bars."""
    section = config.rpmem
    return config.budget * (section.compile_steps + section.merge_steps) + 2 * section.swap_steps


@flow(name="rpmem", flow_run_name=flow_run_name)
def rpmem(config: RPMemRun, store_uri: str | None = None, run_id: str | None = None,
          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (), parent_run_id)
    with recorded_run(ref):
        publish_users(ref)
        system = init_memory(ref)
        for round_index in range(config.budget):
            candidate = train_compiler(ref, round_index, system)
            candidate = train_gate(ref, round_index, candidate)
            with transaction():
                system = gate_memory(ref, round_index, candidate, system)
                register_memory(ref, round_index)
        holdout = write_memory(ref, system)
        with transaction():
            freeze_memory(ref, system, holdout)
        swap = swap_base(ref, system)
        summary = rpmem_summary(ref, system, holdout, swap)
    return summary
