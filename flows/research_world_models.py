"""research_world_models: Research World Models — use past experiments to choose the next
experiment, measured on lasso.

    archive:  the seed solver and `interventions` knob settings of it, run for real on
              every train and select dataset (each dataset an environment)
    distill:  one record (environment, intervention, near-duplicate group, gain vs the
              seed) per dataset and intervention
    for round r = 1 .. budget:
        sample:   per environment, `proposals` records drawn (the same for every predictor)
        score:    each predictor (no-experience prior, kNN, ridge) predicts each
                  proposal's gain from the archive without its near-duplicate group
                  (cross-env: and without its environment)
        gate:     the top `choose` are the selection; Regret@k and NDCG@k recorded
    gate:     per setting, kNN and ridge against the prior, paired over environments
    register: the archive's best recipe, with its held-out score (datasets no
              predictor read)
"""

from __future__ import annotations

from prefect import flow

from schemas.loops import ResearchWorldModelsRun
from tasks.loops.research_world_models.stages import build_archive, distill_records, select_round
from tasks.loops.research_world_models.verdict import judge, register_recipe
from tasks.runtime.lifecycle import flow_run_name, recorded_run, run_id_of_flow_run, start_run


def progress_total(config: ResearchWorldModelsRun) -> int:
    """Archive programs executed (the seed and every intervention), then selection rounds."""
    return 1 + config.research_world_models.interventions + config.budget


@flow(name="research_world_models", flow_run_name=flow_run_name)
def research_world_models(config: ResearchWorldModelsRun, store_uri: str | None = None, run_id: str | None = None,
                          parent_run_id: str | None = None) -> dict:
    """A new run when `run_id` is None; else start or resume that run."""
    run_id = run_id or run_id_of_flow_run(config.loop)
    ref = start_run(store_uri, run_id, config, (config.suite,), parent_run_id)
    with recorded_run(ref):
        ids = build_archive(ref)
        archive = distill_records(ref, ids)
        selections = [s for r in range(1, config.budget + 1) for s in select_round(ref, r, archive)]
        found = judge(ref, selections)
        recipe = register_recipe(ref, archive, ids)
    return {"run_id": run_id, "records": len(archive), **recipe,
            "regret_vs_prior": {f"{c['setting']}/{c['predictor']}": [round(c["delta"], 4), *map(lambda x: round(x, 4), c["ci"])]
                                for c in found}}
