"""forge: one failure tells the system both how to revise the prompt and which training
data to add (FORGE, Algorithm 1). Task-model weights and the validation set are frozen;
what persists is the prompt program (the agent's rules), the training set (it grows with
verified synthetic instances) and the failure memory.

    P <- the seed prompt (or the champion of toolsim/forge); T <- train split (plus the
    champion of toolsim/forge-data); M <- {}; best <- val(P)
    for step t = 0 .. budget-1:
        execute:  run P on a batch B of T
        score:    the task metric; a run that is not fully correct is imperfect
        distill:  (b) abstract every imperfect trajectory into a failure mode
                  (tool, event, error, missing action) with its trajectories: M
        sample:   (a) the reflector revises P from the imperfect trajectories: P'
        in one transaction:
            gate (prompt): P' must improve on B, then beat P on the fixed validation set
            register:      an accepted P' becomes the champion: P <- P'
        in one transaction:
            gate (data):   if best val has not improved for `patience` steps, synthesise
                           from M with 4 strategies (same failure, counter-example,
                           boundary, distractor); the verifier admits the instances the
                           oracle solves that really target their mode: T <- T + admitted
            register:      the expanded T becomes the champion of toolsim/forge-data
    register: the best-validation P as stable, with its held-out success
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import ForgeRun
from tasks.loops.forge.data import data_gate, register_data
from tasks.loops.forge.gate import finish, forge_summary, gate_prompt, register_prompt, validate_start
from tasks.loops.forge.stages import distill_modes, execute_batch, reflect_prompt, start
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run
from tasks.runtime.progress import reporter


def progress_total(config: ForgeRun) -> int:
    """Optimisation steps, for progress bars."""
    return config.budget


@flow(name="forge", flow_run_name=flow_run_name)
def forge(config: ForgeRun, store_uri: str | None = None, run_id: str | None = None,
          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        prompt, memory, data = start(ref)
        validate_start(ref, prompt)
        for step in range(config.budget):
            execute_batch(ref, step, prompt, data)
            memory = distill_modes(ref, step, prompt, data, memory)
            candidate = reflect_prompt(ref, step, prompt, data)
            if candidate is not None:
                with transaction():
                    prompt = gate_prompt(ref, step, candidate, prompt)
                    register_prompt(ref, step)
            with transaction():
                data = data_gate(ref, step, prompt, data, memory)
                register_data(ref, step)
            reporter().advance(1, f"step {step}")
        finish(ref, prompt)
        summary = forge_summary(ref)
    return summary
