"""prior_or_feedback: does a config proposer use the experimental feedback in its trial
history, or only its prior? (Prior-or-Feedback, a measurement protocol on pde1d.)

    for each source -> target condition, seed s = 1 .. budget, proposer in {random, TPE, prior}:
        H <- []
        for t = 1 .. 20:
            sample:  c_t <- proposer(task text, H, seed)
            execute: fine-tune a fresh copy of the source operator with c_t
            score:   validation autoregressive nRMSE v_t
            distill: H <- H + [(c_t, v_t)]
        gate/register: c* = argmin v_t, tested once on the holdout (nothing carries over)
        interventions, replayed on the recorded H:
            (b) t = 1 with only the PDE description changed
            (c) at decision points t: v_1 .. v_{t-1} permuted, same seed -> d_c = dist(c', c_t)
            (d) same scores, another RNG seed -> d_d
    verdict per proposer: (a) trial-1 rank in the matched random pool, test nRMSE vs
    random and TPE (matched), feedback sensitivity = d_c - d_d with its CI
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import PriorOrFeedbackRun
from tasks.loops.prior_or_feedback.stages import (attribute, proposers_of, protocol_summary, publish_space,
                                                  replay_search, run_search)
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def plan(config: PriorOrFeedbackRun) -> list[tuple[str, int, str]]:
    """Every (condition, seed, proposer) search; budget counts seeds."""
    s = config.prior_or_feedback
    return [(c, config.seed + k, p) for c in s.conditions for k in range(config.budget) for p in proposers_of(config)]


def progress_total(config: PriorOrFeedbackRun) -> int:
    return len(plan(config))


@flow(name="prior_or_feedback", flow_run_name=flow_run_name)
def prior_or_feedback(config: PriorOrFeedbackRun, store_uri: str | None = None, run_id: str | None = None,
                      parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        publish_space(ref)
        for condition, seed, proposer in plan(config):
            run_search(ref, condition, seed, proposer)
            replay_search(ref, condition, seed, proposer)
        attribute(ref, plan(config))
        summary = protocol_summary(ref)
    return summary
