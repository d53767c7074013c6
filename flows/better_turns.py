"""better_turns: per-turn scoring on the reference history against closed-loop workflow
completion, before and after SFT (Better Turns).

The agents under test are behaviour-cloned policies over toolsim turns
(tasks/loops/better_turns/policy.py); the reference is toolsim's scripted agent under a
harness that serves every request (reference.json). Nothing evolves: the protocol measures.

    sample:   the scripted reference agent on every conversation: the gold histories
    for model m = 0 .. budget-1:                (one init and shuffle seed each)
        base <- BC on few logs of mismatched templates
        sft  <- base + sft_epochs of BC on every train conversation
        for ckpt in (base, sft), on every held-out conversation:
            gold history, per turn:  L1 token-F1 to the reference turn, L2 judge,
                                     L3 exact tool name and arguments
            closed loop:             L4 the model runs on its own history (errors handed
                                     back, at most `retries`); completed = it stopped
                                     with exactly the reference's calls
                                     L5 holistic judge: goal, policy (guards), tool use
    gate:     every layer apart (text and tool turns apart): SFT − base paired over
              conversations with a 95% CI and the seed-to-seed noise floor; per
              checkpoint the gold-turn vs workflow gap with its CI, the rank agreement of
              similarity and completion, and the high-similarity runs that do not complete
    register: nothing is promoted; the run's rows are the release
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import BetterTurnsRun
from tasks.loops.better_turns.stages import CHECKPOINTS, record_references, score_checkpoint, train_checkpoints
from tasks.loops.better_turns.verdict import compare, protocol_summary
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: BetterTurnsRun) -> int:
    """Checkpoints scored, for progress bars."""
    return config.budget * len(CHECKPOINTS)


@flow(name="better_turns", flow_run_name=flow_run_name)
def better_turns(config: BetterTurnsRun, store_uri: str | None = None, run_id: str | None = None,
                 parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        record_references(ref)
        checkpoints = []
        for model in range(config.budget):
            ids = train_checkpoints(ref, model)
            for ckpt in CHECKPOINTS:
                score_checkpoint(ref, model, ckpt, ids[ckpt])
            checkpoints.append(ids)
        compare(ref, checkpoints)
    return protocol_summary(ref)
