"""moscopt: improve the skills and also when to load which skills (MOSCOPT), on toolsim.

A skill is a rule bundle (toolsim rules and plan skills); the gating skill G is a
template -> skill score table that loads K skills per task, and only the loaded skills'
text enters the frozen agent's harness. Loading an irrelevant bundle lets its rules fire
and, under toolsim version 2, costs step budget, so over-loading is costly. Three-stage
interleaved edits (Algorithm 1), each gated on validation. Departures from the paper:
the modules named in ``tasks/loops/moscopt/``.

    catalogue <- rules from the seed harness's train failures + retries + plan skills
    pool_0 <- the catalogue grouped by theme (retry, identity, pagination, refund, misc)
    G_0 <- empty (every task loads the first K skills by id); admitted, registered
    memory <- (rejected edits: empty, per-operator experience: 1/2)
    for round r = 1 .. budget:
        execute: each train and select task runs with the K skills G loads for it
        score:   task success; every loaded skill shares the episode's reward
        distill: skill statistics += (n_active, n_success) of the train episodes
        sample:  stage = 3 if r % period == 0 else (1 if r odd else 2)
                 1: edit one skill loaded on a failing episode, G fixed
                 2: edit G from a mis-selection (promote an unloaded / demote a loaded skill)
                 3: eliminate the lowest-rate skill, or combine / breed two skills
                 (operators weighted by their acceptance EMA, rejected edits tabu)
        gate:    accept iff validation (select) success improves
        register: accepted -> the new state (skills + G) is the champion, holdout measured
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import MoscoptRun
from tasks.loops.moscopt.stages import edit_round, moscopt_summary, plant
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: MoscoptRun) -> int:
    """Rounds a run makes (the seed pool's included), for progress bars."""
    return config.budget + 1


@flow(name="moscopt", flow_run_name=flow_run_name)
def moscopt(config: MoscoptRun, store_uri: str | None = None, run_id: str | None = None,
            parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        plant(ref)
        for round_index in range(1, config.budget + 1):
            edit_round(ref, round_index)
    return moscopt_summary(ref)
