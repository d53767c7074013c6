"""rsi_anything: RSI-Anything — the proposer policy and its outcome predictor (world
model) change together, so the gate accepts the pair, not the parts (bin_packing).

    pair_0 <- (the uniform operator policy, WM v0 fitted on `warmup` executed children of
              the seed program); the incumbent is the best public program
    for round r = 1 .. budget:
        sample:   the policy proposes `candidates_per_round` children of the incumbent
        score:    the WM predicts each child's public-score gain
        execute:  only its top pick runs on the public tests -> a (prediction, actual)
                  pair attributed to the WM version that made it
        distill:  the bandit update proposes a new policy; the WM reliability check on the
                  current candidates (low coverage or few pairs: insufficient evidence);
                  the WM is refit only if the check flags it and the data suffice
        gate:     new policy and new WM validated separately on fresh draws; the passing
                  parts assembled; the assembled pair must beat the old pair, else the old
                  pair is kept (`gate=parts`: the passing parts are kept as they are)
        register: an accepted pair becomes the `<suite>/rsi_anything-pair` champion
    finish: the best public program registered with its hidden (holdout) score
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import RSIAnythingRun
from tasks.loops.rsi_anything.gate import distill, finish, gate, register_pair
from tasks.loops.rsi_anything.stages import execute, sample, warm_up
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: RSIAnythingRun) -> int:
    """Programs executed online: the seed and the warm-up children, then one pick a round."""
    return 1 + config.rsi_anything.warmup + config.budget


@flow(name="rsi_anything", flow_run_name=flow_run_name)
def rsi_anything(config: RSIAnythingRun, store_uri: str | None = None, run_id: str | None = None,
                 parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy, wm, incumbent = warm_up(ref)
        register_pair(ref, 0, policy, wm, ("", ""))
        for r in range(1, config.budget + 1):
            children = sample(ref, r, policy, wm, incumbent)
            incumbent = execute(ref, r, children, incumbent)
            new_policy, new_wm = distill(ref, r, policy, wm)
            previous = (policy, wm)
            policy, wm, incumbent = gate(ref, r, policy, wm, new_policy, new_wm, incumbent)
            register_pair(ref, r, policy, wm, previous)
        summary = finish(ref, incumbent, policy, wm)
    return {"run_id": run_id, **summary}
