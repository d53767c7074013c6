"""research_world_models' stages at their Prefect boundaries. Each publishes its parts
once (`tasks.runtime.parts.once`) and reads what earlier stages published, so a retry or
`ratchet resume` continues where it stopped.

Environments are the datasets of the lasso suite's train and select splits; the
holdout datasets are never read by a predictor: they only score the registered recipe."""

from __future__ import annotations

import json
import random

from prefect import task

from schemas.ids import derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow
from tasks.loops.research_world_models.archive import apply_knobs, interventions, records
from tasks.loops.research_world_models.selection import Record, predict_knn, predict_prior, predict_ridge, \
    selection_round, top_k
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import run_candidates
from tasks.stages.score import score_candidates

RECORD_KIND = "rwm_record"
SELECTION_KIND = "rwm_selection"
METRIC_KIND = "rwm_metric"
GATE = "rwm_predictor"
SETTINGS = ("same", "cross")
PREDICTORS = ("prior", "knn", "ridge")


def section(ref: RunRef):
    return run_config(ref).research_world_models


def predictor(ref: RunRef, name: str):
    s = section(ref)
    return {"prior": predict_prior, "knn": lambda c, x: predict_knn(c, x, s.knn_k),
            "ridge": lambda c, x: predict_ridge(c, x, s.ridge_lambda)}[name]


def search_cases(ref: RunRef) -> list:
    suite = run_suite(ref)
    return cases_by_split(suite, "train") + cases_by_split(suite, "select")


@task(name="archive", **STAGE_OPTIONS)
def build_archive(ref: RunRef) -> list[str]:
    """sample + execute: the seed solver and `interventions` knob settings of it, run for
    real in the sandbox on every train and select case. Returns the candidate ids, seed first."""
    store, suite, config = store_for(ref.store_uri), run_suite(ref), run_config(ref)
    knob_sets = interventions(section(ref).interventions, config.seed)

    def rows() -> list[CandidateRow]:
        out, seed_id = [], store.put_blob(suite.seed_program().encode())
        for index, knobs in enumerate([{}] + knob_sets):
            source = apply_knobs(suite.seed_program(), knobs)
            cid = store.put_blob(source.encode())
            out.append(CandidateRow(run_id=ref.run_id, candidate_id=cid, round=0, parent_ids=[] if not index else
                                    [seed_id], operator="seed" if not index else "knobs",
                                    proposer="seed" if not index else "grid", artifact_kind=suite.artifact_kind,
                                    artifact_uri=store.blob_uri(cid), island=-1,
                                    summary=json.dumps(knobs, sort_keys=True)))
        return out

    ids = [c.candidate_id for c in once(ref, "candidates", "sample", "archive", rows)]
    cases = search_cases(ref)
    for index, cid in enumerate(ids):  # one part per intervention: a retry resumes at the next
        run_candidates(ref, f"archive-{index:04d}", [cid], cases)
        score_candidates(ref, f"archive-{index:04d}", [cid])
        reporter().advance(1, f"archive {index}/{len(ids) - 1}")
    return ids


@task(name="distill", **STAGE_OPTIONS)
def distill_records(ref: RunRef, ids: list[str]) -> list[Record]:
    """distill: one (environment, intervention, gain vs the seed) record per dataset and
    intervention (`rwm_record`)."""
    store, suite = store_for(ref.store_uri), run_suite(ref)

    def rows() -> list[DistillateRow]:
        metric = suite.primary_metric
        scores = [r for r in store.read_rows("scores", ref.run_id) if r.metric == metric and r.split != "holdout"]
        by_candidate = {cid: {r.case_id: r.value for r in scores if r.candidate_id == cid} for cid in ids}
        candidates = {c.candidate_id: c for c in store.read_rows("candidates", ref.run_id)}
        knobs = [json.loads(candidates[cid].summary) for cid in ids[1:]]
        built = records(knobs, [by_candidate[cid] for cid in ids[1:]], by_candidate[ids[0]])
        return [DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, RECORD_KIND, r.record_id),
                              round=0, kind=RECORD_KIND, uri=None, source_execution_ids=[], support=1, status="active",
                              content=json.dumps({"record_id": r.record_id, "env_id": r.env_id, "group": r.group,
                                                  "features": list(r.features), "gain": r.gain,
                                                  "candidate_id": ids[1 + int(r.record_id[1:4])]}, sort_keys=True))
                for r in built]

    return [as_record(json.loads(d.content)) for d in once(ref, "distillates", "distill", "archive", rows)]


def as_record(body: dict) -> Record:
    return Record(body["record_id"], body["env_id"], body["group"], tuple(body["features"]), body["gain"])


@task(name="select", **STAGE_OPTIONS)
def select_round(ref: RunRef, r: int, archive: list[Record]) -> list[dict]:
    """score (predict) + gate (choose): per environment, `proposals` records drawn for
    round `r` (the same draw for every predictor and setting: paired); each predictor
    predicts every proposal's gain from the archive without the proposal's near-duplicate
    group (cross: and without its environment) and picks the top `choose`."""
    s, seed = section(ref), run_config(ref).seed

    def rows() -> list[DistillateRow]:
        out = []
        for env in sorted({a.env_id for a in archive}):
            pool = [a for a in archive if a.env_id == env]
            proposals = random.Random(seed_for(seed, "rwm", r, env)).sample(pool, min(s.proposals, len(pool)))
            for setting in SETTINGS:
                for name in PREDICTORS:
                    regret, ndcg, predicted = selection_round(archive, proposals, predictor(ref, name),
                                                              setting == "cross", s.choose)
                    chosen = top_k(predicted, s.choose)
                    body = {"round": r, "env": env, "setting": setting, "predictor": name,
                            "proposals": [p.record_id for p in proposals], "predicted": predicted,
                            "realized": [p.gain for p in proposals], "chosen": chosen, "regret": regret,
                            "ndcg": ndcg}
                    out.append(DistillateRow(
                        run_id=ref.run_id, distillate_id=derived_id(ref.run_id, SELECTION_KIND, r, env, setting, name),
                        round=r, kind=SELECTION_KIND, content=json.dumps(body, sort_keys=True), uri=None,
                        source_execution_ids=[], support=len(proposals), status="active"))
        return out

    reporter().advance(1, f"selection round {r}")
    return [json.loads(d.content) for d in once(ref, "distillates", "select", f"r{r:04d}", rows)]
