"""evoalloc's stages at their Prefect boundaries. Each publishes its parts once
(`tasks.runtime.parts.once`) and reads the run's state back from the store (the
`evoalloc_allocation` distillates), so a retry or `ratchet resume` continues where it stopped."""

from __future__ import annotations

import json
import random
from statistics import fmean

from prefect import task

from schemas.configs import EvolveConfig
from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow
from tasks.loops.evoalloc.logic import AllocCase, AllocPolicy, counterfactual, percentile, promotes, shadow_level
from tasks.proposers.base import ParentInfo
from tasks.proposers.mutate import MutationProposer
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.search.archive import case_scores
from tasks.stages.execute import run_candidates
from tasks.stages.score import score_candidates

ALLOC_KIND = "evoalloc_allocation"
EXPERIENCE_KIND = "evoalloc_experience"
RUN_KIND = "evoalloc_run"
GATE = "evoalloc_shadow"
DUPLICATE_RETRIES = 8


def section(ref: RunRef):
    return run_config(ref).evoalloc


def levels(ref: RunRef) -> tuple[list, list]:
    """(Full cases: the select split, Partial cases: its `partial_files` instance files)."""
    full = cases_by_split(run_suite(ref), "select")
    files = set(section(ref).partial_files)
    return full, [c for c in full if c.case_id.split("/")[0] in files and "/" in c.case_id]


def allocations(ref: RunRef, upto: int | None = None) -> list[dict]:
    """The run's allocations in order (those of rounds <= `upto`): what a rerun of round
    `upto`'s stages must see, whatever later rounds published."""
    rows = store_for(ref.store_uri).read_rows("distillates", ref.run_id)
    return sorted((json.loads(d.content) for d in rows if d.kind == ALLOC_KIND and (upto is None or d.round <= upto)),
                  key=lambda a: a["order"])


def as_case(a: dict) -> AllocCase:
    delta = None if a["partial_score"] is None or a["parent_partial"] is None else a["partial_score"] - a["parent_partial"]
    return AllocCase(a["candidate_id"], a["parent_pct"], delta, a["is_new_best"])


def measure(ref: RunRef, tag: str, ids: list[str], cases: list) -> None:
    if ids and cases:
        run_candidates(ref, tag, ids, cases)
        score_candidates(ref, tag, ids)


def level_scores(ref: RunRef, candidate_id: str, partial: list) -> tuple[float | None, float | None]:
    """(partial mean, full mean) of the candidate's select scores so far (None: not run)."""
    metric = run_suite(ref).primary_metric
    got = case_scores(store_for(ref.store_uri).read_rows("scores", ref.run_id), metric, candidate_id, "select")
    full_ids, part_ids = [c.case_id for c in levels(ref)[0]], [c.case_id for c in partial]
    part = fmean(got[c] for c in part_ids) if part_ids and all(c in got for c in part_ids) else None
    full = fmean(got[c] for c in full_ids) if all(c in got for c in full_ids) else None
    return part, full


def alloc_row(ref: RunRef, r: int, a: dict) -> DistillateRow:
    return DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "alloc", a["candidate_id"]), round=r,
                         kind=ALLOC_KIND, content=json.dumps(a, sort_keys=True), uri=None, source_execution_ids=[],
                         support=1, status="active")


@task(name="init-policy", **STAGE_OPTIONS)
def initial(ref: RunRef) -> str:
    """Round 0: the initial policy (from the config) and the seed program, full-evaluated."""
    store, s, suite = store_for(ref.store_uri), section(ref), run_suite(ref)
    policy = AllocPolicy(s.discard_below, s.full_above, s.promote_at)

    def rows() -> list[CandidateRow]:
        pid, seed = store.put_blob(policy.code().encode()), store.put_blob(suite.seed_program().encode())
        return [CandidateRow(run_id=ref.run_id, candidate_id=pid, round=0, parent_ids=[], operator="initial",
                             proposer="config", artifact_kind="allocator", artifact_uri=store.blob_uri(pid),
                             island=-1, summary=policy.code()),
                CandidateRow(run_id=ref.run_id, candidate_id=seed, round=0, parent_ids=[], operator="seed",
                             proposer="seed", artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(seed),
                             island=-1, summary="the suite's seed program")]

    pol, seed = once(ref, "candidates", "sample", "init", rows)
    full, partial = levels(ref)
    measure(ref, "root", [seed.candidate_id], full)
    part, score = level_scores(ref, seed.candidate_id, partial)
    root = {"order": 0, "round": 0, "candidate_id": seed.candidate_id, "parent_id": None, "policy_version": pol.candidate_id,
            "shadow_version": None, "decision": "full", "level": "full", "counterfactual": False, "parent_pct": 1.0,
            "partial_score": part, "parent_partial": None, "full_score": score, "is_new_best": True, "partial_run": False}
    once(ref, "distillates", "allocate", "r0000", lambda: [alloc_row(ref, 0, root)])
    reporter().advance(1, "root")
    return pol.candidate_id


@task(name="sample", **STAGE_OPTIONS)
def sample(ref: RunRef, r: int) -> list[str]:
    """The generator (evolve's `mutate`): children of parents drawn from the best
    `parents_top` full-evaluated programs, never a program the run already holds."""
    store, s, suite = store_for(ref.store_uri), section(ref), run_suite(ref)
    pool = sorted((a for a in allocations(ref, r - 1) if a["full_score"] is not None), key=lambda a: -a["full_score"])
    top = pool[: s.parents_top]
    proposer = MutationProposer(EvolveConfig(mutations_per_child=s.mutations_per_child))
    rng = random.Random(seed_for(run_config(ref).seed, "evoalloc", r))

    def rows() -> list[CandidateRow]:
        seen = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}
        out = []
        for _ in range(s.children_per_round):
            parent = rng.choice(top)
            info = ParentInfo(parent["candidate_id"], store.get_blob(parent["candidate_id"]).decode(),
                              parent["full_score"])
            for _ in range(DUPLICATE_RETRIES):
                proposal = proposer.propose([info], rng)
                if content_id(proposal.source) not in seen:
                    break
            else:
                continue
            cid = store.put_blob(proposal.source.encode())
            seen.add(cid)
            out.append(CandidateRow(run_id=ref.run_id, candidate_id=cid, round=r, parent_ids=[info.candidate_id],
                                    operator=proposal.operator, proposer=proposal.proposer,
                                    artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(cid), island=-1,
                                    summary=proposal.summary))
        return out

    return [c.candidate_id for c in once(ref, "candidates", "sample", f"r{r:04d}", rows)]


def policy_of(ref: RunRef, policy_id: str) -> AllocPolicy:
    return AllocPolicy.from_code(store_for(ref.store_uri).get_blob(policy_id).decode())


@task(name="allocate", **STAGE_OPTIONS)
def allocate(ref: RunRef, r: int, children: list[str], active: str, shadow: str) -> None:
    """score (allocate) + execute: each child gets the active policy's decision; while a
    shadow policy is on trial the child is evaluated at the higher of both levels (and
    promoted if either promotes); a would-be discard is full-evaluated with probability
    `counterfactual_rate`. One `evoalloc_allocation` distillate per child."""
    key = f"r{r:04d}"
    if store_for(ref.store_uri).has_part("distillates", ref.run_id, "allocate", key):
        return
    s, (full, partial), prior = section(ref), levels(ref), allocations(ref)
    has_partial = bool(partial)
    by_id = {a["candidate_id"]: a for a in prior}
    pool = [a["full_score"] for a in prior if a["full_score"] is not None]
    parents = {c.candidate_id: c.parent_ids[0] for c in store_for(ref.store_uri).read_rows("candidates", ref.run_id)
               if c.candidate_id in set(children)}
    policies = [policy_of(ref, active)] + ([policy_of(ref, shadow)] if shadow else [])
    plan = {}
    for cid in children:
        pct = percentile(by_id[parents[cid]]["full_score"], pool)
        level = shadow_level(policies, pct, has_partial)
        cf = level == "discard" and counterfactual(seed_for(run_config(ref).seed, "counterfactual", cid),
                                                   s.counterfactual_rate)
        plan[cid] = {"parent_pct": pct, "decision": shadow_level(policies[:1], pct, has_partial),
                     "level": "full" if cf else level, "counterfactual": cf}
    first = [c for c in children if plan[c]["level"] == "partial"]
    measure(ref, f"{key}-part", first, partial)
    promoted = []
    for cid in first:
        delta = level_scores(ref, cid, partial)[0] - by_id[parents[cid]]["partial_score"]
        if any(shadow_level([p], plan[cid]["parent_pct"], True) == "partial" and promotes(p, delta) for p in policies):
            plan[cid]["level"] = "full"
            promoted.append(cid)
    measure(ref, f"{key}-full", [c for c in children if plan[c]["level"] == "full" and c not in promoted], full)
    measure(ref, f"{key}-rest", promoted, [c for c in full if c not in partial])
    best, rows = max(pool), []
    for i, cid in enumerate(children):
        part, score = level_scores(ref, cid, partial)
        a = {"order": len(prior) + i, "round": r, "candidate_id": cid, "parent_id": parents[cid], "policy_version": active,
             "shadow_version": shadow or None, **plan[cid], "partial_score": part,
             "parent_partial": by_id[parents[cid]]["partial_score"], "full_score": score,
             "is_new_best": None if score is None else score > best, "partial_run": cid in first}
        best = best if score is None else max(best, score)
        rows.append(alloc_row(ref, r, a))
    once(ref, "distillates", "allocate", key, lambda: rows)
    reporter().advance(len(children), f"round {r}")
