"""gai: the loop manifest of a store (GAI: Generalized Agent Iteration). Tell apart
improving the policy, improving the updater, and rewriting the evaluation standard.

Nothing is improved; the protocol reads what every run of the store declared and
recorded and places it on the paper's two switches: (1) does the improvement mechanism
belong to the agent (RSI) or is it a fixed updater (GPI); (2) is the progress standard
anchored outside the agent, drifting within the run, or self-referential.

    sample:   every flow (a run of the store, not gai's own) declares its components:
              policy, evaluator, improver, meta-evaluator, evaluation basis; which are
              mutable and by what (its loop spec and config)
    execute:  read what each flow recorded, in SQL: its anchored scorer version, the
              scorer versions its gate weighed, its cases' splits, the cases its
              selection read, its champion versions
    score:    each version's internal (select) and external (holdout) score
    distill:  attribute each version's diff to the mutable components; a gain seen
              only internally is labelled possible standard drift, not progress
    gate:     flag flows that changed the evaluator or the basis (goal-drifting,
              self-referential) or whose held-out split selection read
    register: each flow's position on the two axes (gai_classification)
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import GAIRun
from tasks.loops.gai.stages import (
    attribute_versions,
    declare_components,
    flag_flows,
    manifest_summary,
    read_records,
    register_positions,
)
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: GAIRun) -> int:
    """One audit."""
    return 1


@flow(name="gai", flow_run_name=flow_run_name)
def gai(config: GAIRun, store_uri: str | None = None, run_id: str | None = None,
        parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (), parent_run_id)
    with recorded_run(ref):
        flow_ids = declare_components(ref)
        records = read_records(ref, flow_ids)
        attribute_versions(ref, records)
        flag_flows(ref, records)
        register_positions(ref, records)
    return manifest_summary(ref)
