"""datasense: predict which training data helps, then verify by training (DataSense-Bench).

A measurement protocol on arith: the selectors are never updated and never see an outcome.

    base  <- a frozen supervised base model (the selectors' forward passes, every student's start)
    for pool p = 0 .. budget-1:
        sample:   a pool of arith rows with planted defects (wrong labels, duplicates,
                  off-task answers; hidden from the selectors) and the base's loss per row
        distill:  each selector (random, loss, length, dedup+difficulty, mixed) splits it into
                  equal disjoint groups with a predicted ranking; invalid ones are recorded
        execute:  a fresh copy of the base per group and per equal-size random subset, one
                  recipe, trained on its rows
        score:    each student's accuracy on the hidden holdout split
        gate:     per selector: predicted-best group − random subsets (paired per case, CI),
                  top-1 hit, Spearman of predicted vs actual ranking (CI)
    register: per selector over every pool: the pooled gain, top-1 hits, mean Spearman
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import DataSenseRun
from tasks.loops.datasense.stages import base_policy, sample_pool, submit, train_and_verify
from tasks.loops.datasense.verdict import aggregate, verify
from tasks.runtime.context import RunRef, store_for
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: DataSenseRun) -> int:
    """Students trained: a group per selector plus the random subsets, per pool."""
    section = config.datasense
    return config.budget * (len(section.selectors) * section.groups + section.random_subsets)


@flow(name="datasense", flow_run_name=flow_run_name)
def datasense(config: DataSenseRun, store_uri: str | None = None, run_id: str | None = None,
              parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        base = base_policy(ref)
        for index in range(config.budget):
            pool = sample_pool(ref, index, base)
            submissions = submit(ref, index, pool)
            students = train_and_verify(ref, index, base, pool, submissions)
            verify(ref, index, submissions, students)
        aggregate(ref, config.budget)
    return summary(ref)


def summary(ref: RunRef) -> dict:
    rows = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, "gate", "aggregate")
    return {"run_id": ref.run_id, **{row.gate: row.reason for row in rows}}
