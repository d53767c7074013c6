"""cover's gate and register. The gate evaluates the trained policies and the untrained
(uniform) ones on the same problems, candidate sets and evaluation streams (`cover_eval`
rows: ckpt, bench = problem, seed, pass1 = best-of-n rerank accuracy, auc, trivial
share, the suite's collapse reason), labels from the GT *select* tests; it accepts when
the mutant-kill AUC gain's paired bootstrap CI lies above 0 and at most half of the
trained suites collapsed (`discriminate.suite_verdict`). Register: the policies and their
test suites as one candidate (content id), with its held-out rerank accuracy (labels
from the GT holdout tests); the champion alias only when the gate accepted."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from statistics import fmean

import numpy as np
from prefect import task

from schemas.ids import derived_id
from schemas.rows import CandidateRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.gate.stats import paired_bootstrap_ci
from tasks.loops.cover.problems import OPERATORS, Problem
from tasks.loops.cover.rounds import candidate_set, evaluate
from tasks.loops.cover.stages import arm_of, section
from tasks.runtime.context import RunRef, run_config, run_suite, store_for
from tasks.runtime.parts import distillate, once
from tasks.runtime.retry import STAGE_OPTIONS

GATE = "cover_suite"


def evaluations(ref: RunRef, problems: list[Problem], code, test, split: str) -> list[dict]:
    """`evaluate` per problem and evaluation seed (streams shared by every checkpoint)."""
    s, seed = section(ref), run_config(ref).seed
    out = []
    for k, p in enumerate(problems):
        for e in range(s.eval_seeds):
            candidates = candidate_set(p, s.programs, np.random.default_rng([seed, k, e, 1]))
            got = evaluate(p, np.asarray(code, float), np.asarray(test, float), arm_of(ref), candidates, split,
                           s.programs, s.tests, np.random.default_rng([seed, k, e, 2]))
            out.append({**got, "seed": e, "auc": 0.5 if got["auc"] is None else got["auc"]})
    return out


def decide(trained: list[dict], base: list[dict]) -> dict:
    """The paired AUC comparison and the collapse count, pure."""
    diffs = [t["auc"] - b["auc"] for t, b in zip(trained, base, strict=True)]
    low, high = paired_bootstrap_ci(diffs)
    collapsed = [f"{t['task_id']}#{t['seed']}: {t['collapse']}" for t in trained if t["collapse"]]
    accept = low > 0 and len(collapsed) <= len(trained) / 2
    return {"delta": fmean(diffs), "ci": [low, high], "diffs": diffs, "collapsed": collapsed, "accept": accept,
            "auc": fmean(t["auc"] for t in trained), "base_auc": fmean(b["auc"] for b in base),
            "trivial_share": fmean(t["trivial_share"] for t in trained),
            "base_trivial_share": fmean(b["trivial_share"] for b in base),
            "rerank": fmean(t["rerank"] for t in trained), "base_rerank": fmean(b["rerank"] for b in base)}


@task(name="gate", **STAGE_OPTIONS)
def gate(ref: RunRef, problems: list[Problem], code: list[float], test: list[float], steps: int) -> dict:
    """The `cover_eval` rows of both checkpoints and one `cover_suite` gate row."""
    uniform_code, uniform_test = [0.0] * len(OPERATORS), [0.0] * len(problems[0].generators)
    trained = evaluations(ref, problems, code, test, "select")
    base = evaluations(ref, problems, uniform_code, uniform_test, "select")
    once(ref, "distillates", "evals", "select", lambda: [
        distillate(ref, "cover_eval", -1, {"ckpt": ckpt, "bench": r["task_id"], "seed": r["seed"], "pass1": r["rerank"],
                                    "auc": r["auc"], "trivial_share": r["trivial_share"], "collapse": r["collapse"],
                                    "kept": r["kept"]}, ckpt, r["task_id"], r["seed"])
        for ckpt, rows in ((steps, trained), (0, base)) for r in rows])
    found = decide(trained, base)
    reason = (f"mutant-kill AUC {found['auc']:.3f} vs the uniform policies' {found['base_auc']:.3f}: "
              f"{found['delta']:+.3f} [{found['ci'][0]:+.3f}, {found['ci'][1]:+.3f}] over {len(trained)} "
              f"problem-seeds; trivial tests {found['trivial_share']:.2f} vs {found['base_trivial_share']:.2f}; "
              f"{len(found['collapsed'])} suites collapsed")
    pairs = [f"{t['task_id']}#{t['seed']}" for t in trained]
    once(ref, "gate_decisions", "gate", "suite", lambda: [decision_row(
        ref, steps, "cover:trained", GATE, "cover:uniform", GateOutcome(
            decision="accept" if found["accept"] else "reject", reason=reason,
            improved_cases=[c for c, x in zip(pairs, found["diffs"]) if x > 0],
            regressed_cases=[c for c, x in zip(pairs, found["diffs"]) if x < 0], select_score=found["auc"],
            baseline_score=found["base_auc"], delta=found["delta"], ci_low=found["ci"][0], ci_high=found["ci"][1],
            n_cases=len(trained), evidence_json=json.dumps(found, sort_keys=True)),
        id_parts=(GATE,), scorer_version=run_suite(ref).scorer_version())])
    return found


@task(name="register", **STAGE_OPTIONS)
def register(ref: RunRef, problems: list[Problem], code: list[float], test: list[float], found: dict) -> dict:
    """The policies and their select-split suites as one content-addressed candidate in the
    registry (`codemidas/cover-tests`), with the held-out rerank accuracy."""
    store = store_for(ref.store_uri)
    suites = {r["task_id"]: r["suite"] for r in evaluations(ref, problems, code, test, "select") if r["seed"] == 0}
    artifact = json.dumps({"code_logits": code, "test_logits": test, "operators": OPERATORS,
                           "generators": problems[0].generators, "suites": suites}, sort_keys=True).encode()
    cid = store.put_blob(artifact)
    holdout = fmean(r["rerank"] for r in evaluations(ref, problems, code, test, "holdout"))
    once(ref, "candidates", "register", "suite", lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=cid, round=found.get("steps", 0), parent_ids=[], operator="reinforce",
        proposer="cover", artifact_kind="weights", artifact_uri=store.blob_uri(cid), island=-1,
        summary=json.dumps({"auc": found["auc"], "accept": found["accept"]}))])
    rows = once(ref, "registry", "register", "suite", lambda: [RegistryRow(
        run_id=ref.run_id, name=f"{run_config(ref).suite}/cover-tests", version=1, candidate_id=cid,
        stage="stable" if found["accept"] else "experimental", alias="champion" if found["accept"] else None,
        decision_id=derived_id(ref.run_id, GATE), select_score=found["auc"], holdout_score=holdout,
        event_at=datetime.now(timezone.utc))])
    return {"candidate_id": cid, "holdout_rerank": rows[0].holdout_score, "accepted": found["accept"]}
