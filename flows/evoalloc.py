"""evoalloc: EvoAlloc — a self-revising Full / Partial / Discard allocator of evaluation
budget inside program evolution, with counterfactual exploration.

    policy_0 <- the initial threshold rules; the seed program is full-evaluated
    for round r = 1 .. budget:
        sample:   the generator (evolve's mutate) proposes children of top programs
        allocate: each child -> Full | Partial | Discard by the active policy (the higher
                  level while a shadow policy is on trial); a Partial child is promoted on
                  its partial score; some would-be discards are full-evaluated anyway
        if a shadow policy is on trial:
            gate: after `shadow_window` shared candidates, fewer missed new bests first,
                  then fewer Full + Partial evaluations; replace only if the new one wins
            register: an accepted policy becomes the `<suite>/evoalloc-policy` champion
        else distill: after `revise_every` full results, supporting and refuting cases
                  (counterfactuals included) -> experience + a new policy on trial
    finish: the best program (held-out score) registered; full evaluations curve recorded
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import EvoAllocRun
from tasks.loops.evoalloc.policy import distill, finish, gate, register_policy
from tasks.loops.evoalloc.stages import allocate, initial, sample
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: EvoAllocRun) -> int:
    """Children allocated at most (the root once, then each round's children)."""
    return 1 + config.budget * config.evoalloc.children_per_round


@flow(name="evoalloc", flow_run_name=flow_run_name)
def evoalloc(config: EvoAllocRun, store_uri: str | None = None, run_id: str | None = None,
             parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        policy, shadow = initial(ref), ""
        register_policy(ref, 0, policy, previous_id="")
        for r in range(1, config.budget + 1):
            children = sample(ref, r)
            allocate(ref, r, children, policy, shadow)
            if shadow:
                previous = policy
                policy, shadow = gate(ref, r, policy, shadow)
                register_policy(ref, r, policy, previous_id=previous)
            else:
                shadow = distill(ref, r, policy)
                if shadow and config.evoalloc.arm == "one_shot":
                    previous = policy
                    policy, shadow = gate(ref, r, policy, shadow)
                    register_policy(ref, r, policy, previous_id=previous)
        record = finish(ref, policy)
    return {"run_id": run_id, "policy": policy[:16], **{k: record[k] for k in (
        "full_evals", "partial_evals", "discards", "counterfactuals", "best_score", "heldout_metric")}}
