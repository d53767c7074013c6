"""Stage tasks of the skilllift loop, first half: plant (the initial skill runs for real;
the rubric and the mutation catalogue are seeded from its failed events), inner (the
rubric-only search: zero simulator calls) and outer (the top-k and the champion run for
real; the round's rank agreement). The gate, the registry and the recalibration are in
``tasks/loops/skilllift/gate.py``; the pure logic, and how it departs from the paper,
in ``rubric.py``, ``inner.py``, ``calibrate.py`` and ``decide.py``.

Tables (``distillates`` kinds, one JSON ``content`` each; ``ratchet sql`` reads them with
``json_extract``): ``skilllift_skills`` (id, round, parent, text, rubric_ver,
rubric_score, operator, executed), ``skilllift_rubrics`` (ver, round, items_json),
``skilllift_real_runs`` (skill_id, round, task_id, run, pass, tokens: the agent's tool
calls, toolsim's cost analog), ``skilllift_calibration`` (round, rubric_ver, n_cands,
rank_corr: Kendall tau-b, ci_low, ci_high, spearman), ``skilllift_cost`` (round, phase,
oracle_tokens: tool calls of real runs, framework_tokens: LLM tokens of the reviser,
rubric_checks: item checks the rubric made, real_episodes), and ``skilllift_catalogue``.
Every part is keyed by stage and round (``once``), so a retry or ``ratchet resume``
writes nothing new. A skill's real runs are its executions under ``real-<id>`` on the
select cases, made once: a champion carried into a later round is not re-run (its
cases' noise is fixed, so a rerun repeats it)."""

from __future__ import annotations

import json
import random
from typing import Sequence

from prefect import task

from schemas.ids import seed_for
from schemas.rows import CandidateRow, DistillateRow
from tasks.gate.evidence import json_safe
from tasks.gate.stage import current_champion, registry_name
from tasks.harness_loops.documents import harness_source
from tasks.harness_loops.episodes import episodes, executions_of, harness_document
from tasks.harness_loops.llm_edit import is_unusable
from tasks.harness_loops.metrics import case_metrics
from tasks.harness_loops.seed import publish_seed
from tasks.loops.skilllift.calibrate import agreement
from tasks.loops.skilllift.inner import Visited, catalogue, hill_climb, rubric_scorer, rule_reviser, top_k
from tasks.loops.skilllift.llm import LLMReviser, refused_rows, reviser_tokens
from tasks.loops.skilllift.rubric import Rubric, rubric_json, rubric_score, seed_rubric
from tasks.proposers.rule_evidence import Trace, trace_of
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import distillate, distilled, once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import run_candidates
from tasks.stages.score import score_candidates

SKILLS, RUBRICS, REAL_RUNS, CALIBRATION, COST, CATALOGUE = (
    "skilllift_skills", "skilllift_rubrics", "skilllift_real_runs", "skilllift_calibration", "skilllift_cost",
    "skilllift_catalogue")


def round_key(round_index: int) -> str:
    return f"r{round_index:04d}"


def real_tag(candidate_id: str) -> str:
    return f"real-{candidate_id[:20]}"


def current_rubric(ref: RunRef) -> tuple[int, Rubric]:
    """(version, items) of the latest rubric."""
    latest = max(distilled(ref, RUBRICS), key=lambda r: r["ver"])
    return latest["ver"], json.loads(latest["items_json"])


def champion_id(ref: RunRef) -> str | None:
    held = current_champion(store_for(ref.store_uri).read_rows("registry", ref.run_id), registry_name(run_config(ref)))
    return held.candidate_id if held else None


# -- real runs -------------------------------------------------------------------------


def run_real(ref: RunRef, candidate_id: str, split: str = "select") -> None:
    """Execute (sandboxed) and score (trusted) a skill on the split's cases, once."""
    tag = real_tag(candidate_id) if split == "select" else f"{split}-{candidate_id[:20]}"
    run_candidates(ref, tag, [candidate_id], cases_by_split(run_suite(ref), split))
    score_candidates(ref, tag, [candidate_id])


def real_cases(ref: RunRef, candidate_id: str) -> dict[str, dict[str, float]]:
    """case -> metric -> value of a skill's real runs on the select cases."""
    return case_metrics(store_for(ref.store_uri).read_rows("scores", ref.run_id), candidate_id, ("select",))


def real_run_rows(ref: RunRef, round_index: int, candidate_id: str) -> list[DistillateRow]:
    return [distillate(ref, REAL_RUNS, round_index, {"skill_id": candidate_id, "round": round_index, "task_id": case,
                                              "run": 0, "pass": bool(m["success"]), "tokens": int(m["tool_calls"])},
                candidate_id, case)
            for case, m in sorted(real_cases(ref, candidate_id).items())]


def traces_of(ref: RunRef, tag: str, candidate_id: str) -> list[Trace]:
    return sorted((trace_of(c.case_id, c.payload, ep) for _, c, ep in episodes(ref, executions_of(ref, tag, candidate_id))),
                  key=lambda t: t.case_id)


def skill_row(ref: RunRef, round_index: int, v: Visited, rubric_ver: int, executed: bool) -> DistillateRow:
    body = {"id": v.skill_id, "round": round_index, "parent": v.parent or None, "operator": v.operator,
            "text": json.dumps(v.document, sort_keys=True), "rubric_ver": rubric_ver,
            "rubric_score": v.rubric_score, "executed": executed}
    return distillate(ref, SKILLS, round_index, body, v.skill_id)


# -- stages ----------------------------------------------------------------------------


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Round 0: publish the initial skill, run it for real on the train cases (its failed
    events seed the rubric and the mutation catalogue) and the select cases."""
    seed = publish_seed(ref, "skilllift", round_key(0), "the suite's seed harness (the initial skill)")
    run_real(ref, seed, "train")
    run_real(ref, seed)
    document = harness_document(ref, seed)

    def rows() -> list[DistillateRow]:
        traces = traces_of(ref, f"train-{seed[:20]}", seed)
        rubric = seed_rubric(traces)
        start = Visited(seed, document, "", "seed", rubric_score(rubric, document), 0)
        real_runs = real_run_rows(ref, 0, seed)
        return [distillate(ref, RUBRICS, 0, {"ver": 0, "round": 0, "items_json": rubric_json(rubric)}),
                distillate(ref, CATALOGUE, 0, {"rules": catalogue(traces, document)}), skill_row(ref, 0, start, 0, True),
                *real_runs, cost_row(ref, 0, "outer", real_runs, 0, 0)]

    once(ref, "distillates", "plant", round_key(0), rows)
    reporter().advance(1, "initial skill")
    return seed


def cost_row(ref: RunRef, round_index: int, phase: str, real_runs: Sequence[DistillateRow], framework_tokens: int,
             rubric_checks: int) -> DistillateRow:
    oracle = sum(json.loads(r.content)["tokens"] for r in real_runs)
    return distillate(ref, COST, round_index, {"round": round_index, "phase": phase, "oracle_tokens": oracle,
                                        "framework_tokens": framework_tokens, "rubric_checks": rubric_checks,
                                        "real_episodes": len(real_runs)}, phase)


def candidate_row(ref: RunRef, round_index: int, v: Visited, proposer: str) -> CandidateRow:
    store, suite = store_for(ref.store_uri), run_suite(ref)
    blob = store.put_blob(harness_source(v.document).encode())
    return CandidateRow(run_id=ref.run_id, candidate_id=blob, round=round_index, parent_ids=[v.parent],
                        operator=v.operator, proposer=proposer, artifact_kind=suite.artifact_kind,
                        artifact_uri=store.blob_uri(blob), island=-1,
                        summary=f"rubric score {v.rubric_score:.4f} (inner step {v.step})")


@task(name="inner", **STAGE_OPTIONS)
def inner(ref: RunRef, round_index: int) -> list[str]:
    """sample + score (inner): the rubric frozen, skills revised from the champion by
    hill climbing on their rubric score (no simulator call); every visited skill is a
    ``skilllift_skills`` row, the top-k not yet executed become candidates. Returns them."""
    config, champion = run_config(ref), champion_id(ref)
    s, key = config.skilllift, round_key(round_index)

    def rows() -> list:
        ver, rubric = current_rubric(ref)
        rules = distilled(ref, CATALOGUE)[0]["rules"]
        revise = LLMReviser(rubric, config.evolve) if config.proposer == "llm" else rule_reviser(rules)
        rng = random.Random(seed_for(config.seed, "skilllift", "inner", round_index))
        visited = hill_climb(harness_document(ref, champion), rubric_scorer(rubric), revise, s.inner_iterations,
                             s.proposals, rng)
        executed = {r["id"] for r in distilled(ref, SKILLS) if r["executed"]}
        chosen = top_k([v for v in visited if v.skill_id != champion], s.top_k, executed)
        picked = {v.skill_id for v in chosen}
        proposer = "llm" if config.proposer == "llm" else "rubric_hill_climb"
        return [*(candidate_row(ref, round_index, v, proposer) for v in chosen),
                *refused_rows(ref, round_index, revise),
                *(skill_row(ref, round_index, v, ver, v.skill_id in picked) for v in visited),
                cost_row(ref, round_index, "inner", [], reviser_tokens(revise), len(visited) * len(rubric))]

    computed: list = []  # one search feeds both parts (an llm reviser is asked once)

    def search(kind: type) -> list:
        computed.extend([] if computed else rows())
        return [r for r in computed if isinstance(r, kind)]

    published = once(ref, "candidates", "inner", key, lambda: search(CandidateRow))
    once(ref, "distillates", "inner", key, lambda: search(DistillateRow))
    reporter().advance(0, f"round {round_index}: inner search")
    return [c.candidate_id for c in published if not is_unusable(c)]  # an unusable answer is never run


@task(name="outer", **STAGE_OPTIONS)
def outer(ref: RunRef, round_index: int, candidates: list[str]) -> dict:
    """execute + score (outer): the top-k and the champion run for real on the select
    cases; the round's rank agreement of the rubric (the version that chose them) with
    the real results. Returns the calibration row's body."""
    champion = champion_id(ref)
    for candidate in candidates:
        run_real(ref, candidate)

    def rows() -> list[DistillateRow]:
        ver, rubric = current_rubric(ref)
        documents = {c: harness_document(ref, c) for c in [champion, *candidates]}
        real = {c: _mean(real_cases(ref, c)) for c in documents}
        corr = agreement([real[c] for c in documents], [rubric_score(rubric, d) for d in documents.values()],
                         seed=seed_for(run_config(ref).seed, "skilllift", "corr", round_index))
        real_runs = [r for c in candidates for r in real_run_rows(ref, round_index, c)]
        body = {"round": round_index, "rubric_ver": ver, "n_cands": corr.n_cands, "rank_corr": corr.kendall,
                "ci_low": corr.ci_low, "ci_high": corr.ci_high, "spearman": corr.spearman, "metric": "kendall_tau_b"}
        return [distillate(ref, CALIBRATION, round_index, json_safe(body)), *real_runs,
                cost_row(ref, round_index, "outer", real_runs, 0, 0)]

    published = once(ref, "distillates", "outer", round_key(round_index), rows)
    reporter().advance(1, f"round {round_index}: {len(candidates)} skills run for real")
    return json.loads(next(r for r in published if r.kind == CALIBRATION).content)


def _mean(cases: dict[str, dict[str, float]]) -> float:
    return sum(m["success"] for m in cases.values()) / len(cases) if cases else 0.0

