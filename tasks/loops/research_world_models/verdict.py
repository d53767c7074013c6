"""research_world_models' metrics, gate and register: per (setting, environment,
predictor) MAE, Spearman, mean Regret@k and NDCG@k and the final best gain over the
rounds (`rwm_metric`); per setting and predictor, a paired comparison with the
no-experience prior over environments (`rwm_predictor` gate rows); the best recipe of
the archive registered with its held-out score."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean

from prefect import task

from schemas.ids import derived_id
from schemas.rows import DistillateRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.gate.stats import paired_bootstrap_ci, sign_test_p, spearman
from tasks.loops.research_world_models.selection import Record
from tasks.loops.research_world_models.stages import GATE, METRIC_KIND, PREDICTORS, SETTINGS, section
from tasks.runtime.context import RunRef, run_config, run_suite
from tasks.runtime.parts import once
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.register import holdout_score


def metrics(selections: list[dict]) -> list[dict]:
    """One row per (setting, env, predictor) of the selection rows, pure."""
    out = []
    keys = sorted({(s["setting"], s["env"], s["predictor"]) for s in selections})
    for setting, env, name in keys:
        mine = [s for s in selections if (s["setting"], s["env"], s["predictor"]) == (setting, env, name)]
        predicted = [x for s in mine for x in s["predicted"]]
        realized = [x for s in mine for x in s["realized"]]
        chosen = [s["realized"][i] for s in mine for i in s["chosen"]]
        out.append({"setting": setting, "env": env, "predictor": name, "rounds": len(mine),
                    "mae": fmean(abs(p - g) for p, g in zip(predicted, realized)),
                    "spearman": spearman(predicted, realized), "regret_at_k": fmean(s["regret"] for s in mine),
                    "ndcg_at_k": fmean(s["ndcg"] for s in mine), "final_best_gain": max(chosen)})
    return out


def comparisons(rows: list[dict]) -> list[dict]:
    """Per setting and experienced predictor: its Regret@k minus the prior's, paired over
    environments, with a bootstrap CI and a sign test; accepted when the CI lies below 0."""
    out = []
    for setting in SETTINGS:
        prior = {r["env"]: r["regret_at_k"] for r in rows if r["setting"] == setting and r["predictor"] == "prior"}
        for name in PREDICTORS[1:]:
            mine = {r["env"]: r["regret_at_k"] for r in rows if r["setting"] == setting and r["predictor"] == name}
            envs = sorted(set(prior) & set(mine))
            diffs = [mine[e] - prior[e] for e in envs]
            low, high = paired_bootstrap_ci(diffs)
            out.append({"setting": setting, "predictor": name, "envs": envs, "diffs": diffs, "delta": fmean(diffs),
                        "ci": [low, high], "sign_p": sign_test_p(diffs), "accept": high < 0,
                        "prior_regret": fmean(prior[e] for e in envs), "regret": fmean(mine[e] for e in envs)})
    return out


@task(name="gate", **STAGE_OPTIONS)
def judge(ref: RunRef, selections: list[dict]) -> list[dict]:
    """The metric rows and one gate row per (setting, predictor): does experience lower
    Regret@k against no experience?"""
    rows = metrics(selections)
    once(ref, "distillates", "metrics", "run", lambda: [DistillateRow(
        run_id=ref.run_id, distillate_id=derived_id(ref.run_id, METRIC_KIND, r["setting"], r["env"], r["predictor"]),
        round=-1, kind=METRIC_KIND, content=json.dumps(r, sort_keys=True), uri=None, source_execution_ids=[],
        support=r["rounds"], status="active") for r in rows])
    found = comparisons(rows)
    version = run_suite(ref).scorer_version()
    once(ref, "gate_decisions", "gate", "predictors", lambda: [decision_row(
        ref, -1, f"predictor:{c['predictor']}", GATE, "predictor:prior", GateOutcome(
            decision="accept" if c["accept"] else "reject",
            reason=(f"{c['setting']}-env Regret@{section(ref).choose} {c['regret']:.3f} vs the prior's "
                    f"{c['prior_regret']:.3f}: {c['delta']:+.3f} [{c['ci'][0]:+.3f}, {c['ci'][1]:+.3f}] over "
                    f"{len(c['envs'])} environments"),
            improved_cases=[e for e, d in zip(c["envs"], c["diffs"]) if d < 0],
            regressed_cases=[e for e, d in zip(c["envs"], c["diffs"]) if d > 0], select_score=c["regret"],
            baseline_score=c["prior_regret"], delta=c["delta"], ci_low=c["ci"][0], ci_high=c["ci"][1],
            n_cases=len(c["envs"]), evidence_json=json.dumps(c, sort_keys=True)),
        id_parts=(GATE, c["setting"], c["predictor"]), scorer_version=version)
        for c in found])
    return found


@task(name="register", **STAGE_OPTIONS)
def register_recipe(ref: RunRef, archive: list[Record], ids: list[str]) -> dict:
    """register: the intervention with the highest mean gain over the environments is the
    `lasso/research_world_models-recipe` champion, with its held-out score."""
    gains: dict[int, list[float]] = {}
    for record in archive:
        gains.setdefault(int(record.record_id[1:4]), []).append(record.gain)
    best = max(sorted(gains), key=lambda i: fmean(gains[i]))
    candidate = ids[1 + best]
    rows = once(ref, "registry", "register", "recipe", lambda: [RegistryRow(
        run_id=ref.run_id, name=f"{run_config(ref).suite}/research_world_models-recipe", version=1,
        candidate_id=candidate, stage="stable", alias="champion", decision_id="", select_score=fmean(gains[best]),
        holdout_score=holdout_score(ref, candidate), event_at=datetime.now(timezone.utc))])
    return {"recipe": candidate, "mean_gain": rows[0].select_score, "holdout_score": rows[0].holdout_score}
