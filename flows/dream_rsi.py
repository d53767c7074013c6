"""dream_rsi: Dream-RSI — rehearse new search-scheduling policies on recorded search
trees, then return to real search with the one that replays best.

    policy_0 <- the initial scheduler (UCB constant, branch width, patience)
    real round 0: policy_0 schedules the frozen code agent (mutate) from the seed
                  program; every attempt is run and recorded as a tree node
    for round r = 1 .. budget-1:
        sample (dream): TPE rewrites policy_{r-1}, scored only by replaying the recorded
                        trees (a request for a never-tried child is "unavailable");
                        policy_{r-1} stays a candidate
        gate:     the lowest replay cost (ties keep policy_{r-1})
        register: the winner becomes the `<suite>/dream_rsi-policy` champion
        real round r: the winner schedules a fresh real search; its tree joins the pool
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import DreamRSIRun
from tasks.loops.dream_rsi.stages import dream, gate_policy, initial, real_round, register_policy
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: DreamRSIRun) -> int:
    """Child programs evaluated at most (the root once, then each real round's budget)."""
    return 1 + config.budget * config.dream_rsi.attempts


@flow(name="dream_rsi", flow_run_name=flow_run_name)
def dream_rsi(config: DreamRSIRun, store_uri: str | None = None, run_id: str | None = None,
              parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy, root = initial(ref)
        register_policy(ref, 0, policy, previous_id="")
        rounds = [real_round(ref, 0, policy, root, rewriter_calls=0)]
        for r in range(1, config.budget):
            rehearsals = dream(ref, r, policy)
            chosen = gate_policy(ref, r, policy, rehearsals)
            policy = register_policy(ref, r, chosen, previous_id=policy)
            rounds.append(real_round(ref, r, policy, root, rewriter_calls=len(rehearsals)))
    return {"run_id": run_id, "policy": policy[:16],
            "discovery_calls": [x["discovery_calls"] for x in rounds],
            "calls_to_target": [x["calls_to_target"] for x in rounds],
            "best_score": [round(x["best_score"], 5) for x in rounds],
            "heldout_metric": [None if x["heldout_metric"] is None else round(x["heldout_metric"], 5) for x in rounds]}
