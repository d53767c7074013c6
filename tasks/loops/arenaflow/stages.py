"""Stage tasks of the arenaflow loop: plant (round 0: the untrained policy and an empty
library), arena_round (sample, execute, score and distill one round; the policy update),
gate_skills (one decision per skill the round wrote or pruned) and, at the end,
register_policy (the final policy with its library against the untrained one, paired on
the select split) and the summary.

A checkpoint is a ``candidates`` row whose id is the sha256 of its blob (weights +
active library, ``policy.to_bytes``). Every stage publishes parts keyed by round
(``rNNNN``); the round's checkpoint is published last, so a round whose checkpoint is
there is complete and a rerun or a resume writes nothing new. The episodes are our own
trusted simulation (the policy and the rule menu are ours; no candidate code runs)."""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict
from statistics import fmean

from prefect import task

from schemas.arenaflow import AFKeyStepRow, AFMatchRow, AFSkillRow, AFSkillUsageRow, AFTrajectoryRow
from schemas.ids import derived_id
from schemas.rows import CandidateRow, TrainStepRow
from suites.toolsim.templates import TEMPLATES
from tasks.loops.arenaflow import policy as pol
from tasks.loops.arenaflow.credit import Skill
from tasks.loops.arenaflow.llm import judge_for
from tasks.loops.arenaflow.loop import ArenaSettings, GroupRecord, train_round
from tasks.harness_loops.menu import OPTION_IDS, OPTIONS
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

STAGE = "arena"


def round_key(r: int) -> str:
    return f"r{r:04d}"


def settings(ref: RunRef) -> ArenaSettings:
    c = run_config(ref).arenaflow
    return ArenaSettings(group_size=c.group_size, top_k=c.top_k, prior_strength=c.prior_strength, beta=c.beta,
                         min_obs=c.min_obs, lr=c.lr, utility_update=c.utility_update, library=c.library)


def checkpoint(ref: RunRef, r: int) -> CandidateRow:
    return store_for(ref.store_uri).read_part("candidates", ref.run_id, STAGE, round_key(r))[0]


def policy_at(ref: RunRef, r: int) -> tuple[pol.SoftmaxPolicy, dict[str, Skill]]:
    """The policy and active-or-pruned library after round ``r`` (0: untrained, empty)."""
    data = store_for(ref.store_uri).get_blob(checkpoint(ref, r).candidate_id)
    library = {s["skill_id"]: Skill(**s) for s in json.loads(pol.library_json_of(data))}
    return pol.from_bytes(data), library


def checkpoint_row(ref: RunRef, r: int, policy: pol.SoftmaxPolicy, library: dict[str, Skill],
                   parents: list[str], summary: str) -> CandidateRow:
    store = store_for(ref.store_uri)
    library_json = json.dumps([asdict(s) for s in sorted(library.values(), key=lambda s: s.skill_id)], sort_keys=True)
    blob = store.put_blob(pol.to_bytes(policy, library_json))
    return CandidateRow(run_id=ref.run_id, candidate_id=blob, round=r, parent_ids=parents, operator="arena_update"
                        if r else "init", proposer="torch", artifact_kind="weights", artifact_uri=store.blob_uri(blob),
                        island=-1, summary=summary)


@task(name="plant", **STAGE_OPTIONS)
def plant(ref: RunRef) -> str:
    """Round 0: the untrained policy (every decision 50/50) and an empty library."""
    policy = pol.make_policy(list(TEMPLATES), len(OPTIONS))
    return once(ref, "candidates", STAGE, round_key(0), lambda: [checkpoint_row(
        ref, 0, policy, {}, [], "untrained softmax policy, empty skill library")])[0].candidate_id


def batch(ref: RunRef, r: int) -> list:
    config = run_config(ref)
    train = cases_by_split(run_suite(ref), "train")
    rng = random.Random(derived_id(config.seed, "arenaflow-batch", r))
    return rng.sample(train, min(config.arenaflow.batch, len(train)))


def group_rows(ref: RunRef, r: int, g: GroupRecord) -> dict[str, list]:
    rows: dict[str, list] = {"af_trajectories": [], "af_matches": [], "af_key_steps": [], "af_skill_usage": []}
    for t, tokens in zip(g.trajectories, g.tokens):
        rows["af_trajectories"].append(AFTrajectoryRow(
            run_id=ref.run_id, round=r, traj_id=t.traj_id, req_id=g.case_id, step_ct=len(t.steps), tokens=tokens,
            success=t.success, score=g.scores[t.traj_id], advantage=g.advantages[t.traj_id],
            choices_json=json.dumps(dict(zip(OPTION_IDS, t.choices)))))
        for idx, depth in sorted(g.depths.get(t.traj_id, {}).items()):
            rows["af_key_steps"].append(AFKeyStepRow(run_id=ref.run_id, round=r, traj_id=t.traj_id, step_idx=idx,
                                                     survival_depth=depth))
    for m in g.matches:
        rows["af_matches"].append(AFMatchRow(
            run_id=ref.run_id, round=r, req_id=g.case_id, match_id=derived_id(ref.run_id, m.match_id), a=m.a, b=m.b,
            winner=m.winner, bracket_round=m.round, key_steps_json=json.dumps({str(k): v for k, v in m.used.items()}),
            judged_by=m.judged_by))
    for tid, sid, used, credited in g.usage:
        rows["af_skill_usage"].append(AFSkillUsageRow(run_id=ref.run_id, round=r, traj_id=tid, skill_id=sid,
                                                      used=used, credited=credited))
    return rows


def skill_rows(ref: RunRef, r: int, before: dict[str, Skill], after: dict[str, Skill]) -> list[AFSkillRow]:
    """Every skill whose state the round changed, as it is after the round."""
    return [AFSkillRow(run_id=ref.run_id, round=r, **asdict(s)) for sid, s in sorted(after.items())
            if before.get(sid) != s]


@task(name="arena_round", **STAGE_OPTIONS)
def arena_round(ref: RunRef, r: int) -> str:
    """sample, execute, score (knockout), distill (step credit, library), the utility
    gate's bookkeeping and the policy update of round ``r``; returns the new checkpoint."""
    store, key = store_for(ref.store_uri), round_key(r)
    if store.has_part("candidates", ref.run_id, STAGE, key):
        return checkpoint(ref, r).candidate_id
    policy, library = policy_at(ref, r - 1)
    before, start = dict(library), time.perf_counter()
    out = train_round(policy, library, batch(ref, r), settings(ref), run_config(ref).seed, r, judge_for(ref))
    tables: dict[str, list] = {}
    for g in out["groups"]:
        for table, rows in group_rows(ref, r, g).items():
            tables.setdefault(table, []).extend(rows)
    for table, rows in tables.items():
        once(ref, table, STAGE, key, lambda rows=rows: rows)
    once(ref, "af_skills", STAGE, key, lambda: skill_rows(ref, r, before, library))
    row = checkpoint_row(ref, r, policy, library, [checkpoint(ref, r - 1).candidate_id],
                         f"round {r}: {len(out['written'])} skills written, {len(out['pruned'])} pruned")
    step = out["update"]
    once(ref, "train_steps", STAGE, key, lambda: [TrainStepRow(
        run_id=ref.run_id, candidate_id=row.candidate_id, step=r, loss=step.loss,
        metrics={"success": fmean(t.success for g in out["groups"] for t in g.trajectories)},
        tokens=sum(sum(g.tokens) for g in out["groups"]), samples=step.decisions, wall_s=time.perf_counter() - start, device="cpu")])
    store.write_part("candidates", ref.run_id, STAGE, key, [row])
    reporter().advance(1, f"round {r}: {row.summary}")
    return row.candidate_id
