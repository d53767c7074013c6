"""harness_or_model: fix the model, compare harnesses, count correctness separately from
finishing on time (Harness or Model).

The "model" is toolsim's frozen procedural agent; the two arms are harness files that
differ in retries, truncation (pages of a listing read), step limit and how they report
usage. On codemidas (``--suite codemidas``) the "model" is a fixed coding policy
(`tasks/loops/harness_or_model/coder.py`) and the arms differ in attempt limit, the
feedback an attempt returns and how they report usage. Nothing evolves: the protocol
measures.

    arms  <- harness_a, harness_b (files of tasks/loops/harness_or_model/harnesses/)
    sample:   publish both arms as the run's candidates (round 0)
    for seed s = 0 .. budget-1:              (the same noise for both arms: paired)
        execute:  both harness programs in the sandbox on every task (codemidas: the
                  policy's attempts, every body run in the sandbox on the visible
                  tests, the answer on the hidden holdout tests)
        score:    re-simulate each run with its arm's step limit (codemidas: the
                  trusted scorer on the answer's holdout outputs); record solved,
                  ended by itself, hit the limit, tool calls, and the usage the arm
                  reports (dropped on purpose for a seeded share: missing usage)
    distill:  cost audit: input re-derived as uncached per arm, re-priced at frozen
              prices, missing usage bounded (0 / arm mean / arm max)
    gate:     per task, b − a of every count with a task-bootstrap 95% CI (a CI with 0
              in it shows no difference, not equivalence); cost per solved task b / a
              with its CI and missing-usage bounds; the pre-registered template-group
              label-permutation test
    register: nothing is promoted; the run's rows are the release
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import HarnessOrModelRun
from tasks.loops.harness_or_model.arms import load_arm
from tasks.loops.harness_or_model.stages import execute_arms, publish_arms, score_arms
from tasks.loops.harness_or_model.verdict import audit, compare, protocol_summary
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def preflight(config: HarnessOrModelRun) -> None:
    """Both arms name shipped harness files (ValueError naming the known ones)."""
    load_arm(config.harness_or_model.harness_a, config.suite)
    load_arm(config.harness_or_model.harness_b, config.suite)


def progress_total(config: HarnessOrModelRun) -> int:
    """Noise seeds scored, for progress bars."""
    return config.budget


@flow(name="harness_or_model", flow_run_name=flow_run_name)
def harness_or_model(config: HarnessOrModelRun, store_uri: str | None = None, run_id: str | None = None,
                     parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        ids = publish_arms(ref)
        for seed_index in range(config.budget):
            execute_arms(ref, seed_index, ids)
            score_arms(ref, seed_index, ids)
        audit(ref, ids)
        compare(ref, ids)
    return protocol_summary(ref)
