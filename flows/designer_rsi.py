"""designer_rsi: procedural memory evolved from user traffic (Designer-RSI).

The artifact is a toolsim harness: the skill library the agent reads (its default
plans, plus learned skills and rules). User traffic arrives in batches; failures feed
a gap pool; one expand or deepen edit per round is admitted only by paired replay.

    library <- the suite's seed harness (default plans only), admitted as champion
    for round r = 1 .. budget:
        execute/score: the champion serves the next batch of train requests
        distill:  each failure -> a gap record (plan completed, requirements unmet)
                  or a failing-item record (the skill / rule whose step broke)
        sample:   expand a gap seen >= gap_threshold times (new skill / procedure),
                  or deepen an item failing >= revise_threshold times (local repair)
                  -- mode limits the pools; no eligible edit: next round's traffic
        execute:  replay candidate and champion on the record's cases and on old
                  successes (same payloads, same noise: paired)
        in one transaction:
            gate:     admit iff no replayed case regresses on any metric and >= 1 improves
            register: admitted -> new champion (holdout measured), skill and record
                      published; rejected -> skill not published, record kept open
    report: the seed and the final library on the test split
"""

from __future__ import annotations

from prefect import flow
from prefect.transactions import transaction

from schemas.loops import DesignerRSIRun
from tasks.loops.designer_rsi.designer import design, distill_gaps, plant_library, serve
from tasks.loops.designer_rsi.designer_gate import designer_summary, final_test, gate_skill, publish_skill, replay_skill
from tasks.runtime.lifecycle import flow_run_name, run_id_of_flow_run, recorded_run, start_run


def progress_total(config: DesignerRSIRun) -> int:
    """Rounds a run makes (the seed's admission included), for progress bars."""
    return config.budget + 1


@flow(name="designer_rsi", flow_run_name=flow_run_name)
def designer_rsi(config: DesignerRSIRun, store_uri: str | None = None, run_id: str | None = None,
                 parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        seed = plant_library(ref)
        with transaction():
            gate_skill(ref, 0, seed)
            publish_skill(ref, 0)
        for round_index in range(1, config.budget + 1):
            champion = serve(ref, round_index)
            distill_gaps(ref, round_index, champion)
            candidate = design(ref, round_index, champion)
            if candidate is None:
                continue
            replay_skill(ref, round_index, candidate, champion)
            with transaction():
                gate_skill(ref, round_index, candidate)
                publish_skill(ref, round_index)
        final_test(ref)
    return designer_summary(ref)
