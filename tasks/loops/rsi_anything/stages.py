"""rsi_anything's warm-up, sample + score and execute stages at their Prefect boundaries,
and the helpers every stage shares. Each stage publishes its parts once
(`tasks.runtime.parts.once`) keyed by round, phase and draw, and reads the run's state
back from its tables, so a retry or `ratchet resume` continues where it stopped.

The public cases are the suite's select split (the gate and the WM see only them); the
hidden cases are the holdout split, run only for the registered program."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from statistics import fmean

from prefect import task

from schemas.configs import EvolveConfig
from schemas.ids import seed_for
from schemas.rows import CandidateRow
from schemas.rsi_anything import RSICandidateRow, RSIExecutionRow, WMVersionRow
from tasks.loops.rsi_anything.pair import OPERATORS, Policy, WorldModel, clip_gain, code_features, fit_ridge, pick
from tasks.proposers.base import ParentInfo, Proposal
from tasks.proposers.llm import LLMProposer, call_cost, load_prompt
from tasks.proposers.mutate import MutationProposer
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import part_key, run_candidates
from tasks.stages.score import score_candidates


def section(ref: RunRef):
    return run_config(ref).rsi_anything


def public_cases(ref: RunRef) -> list:
    return cases_by_split(run_suite(ref), "select")


def public_scores(ref: RunRef) -> dict[str, float]:
    """candidate id -> mean primary metric over the public cases (every candidate run on all of them)."""
    suite, n = run_suite(ref), len(public_cases(ref))
    values: dict[str, dict[str, float]] = {}
    for s in store_for(ref.store_uri).read_rows("scores", ref.run_id):
        if s.metric == suite.primary_metric and s.split == "select":
            values.setdefault(s.candidate_id, {})[s.case_id] = s.value
    return {c: fmean(v.values()) for c, v in values.items() if len(v) == n}


def measure(ref: RunRef, tag: str, ids: list[str]) -> dict[str, float]:
    """Run and score on the public cases the ids not yet measured; all public scores."""
    known = public_scores(ref)
    pending = list(dict.fromkeys(c for c in ids if c not in known))
    if pending:
        run_candidates(ref, tag, pending, public_cases(ref))
        score_candidates(ref, tag, pending)
        known = public_scores(ref)
    return known


def put_artifact(ref: RunRef, r: int, kind: str, code: str, parents: list[str], operator: str, stage: str,
                 key: str) -> str:
    """A policy / WM / pair as a content-addressed candidate (published once per stage key)."""
    store = store_for(ref.store_uri)
    cid = store.put_blob(code.encode())

    def rows() -> list[CandidateRow]:
        if any(c.candidate_id == cid for c in store.read_rows("candidates", ref.run_id)):
            return []
        return [CandidateRow(run_id=ref.run_id, candidate_id=cid, round=r, parent_ids=parents, operator=operator,
                             proposer="rsi_anything", artifact_kind=kind, artifact_uri=store.blob_uri(cid),
                             island=-1, summary=code[:400])]

    once(ref, "candidates", stage, key, rows)
    return cid


def policy_of(ref: RunRef, cid: str) -> Policy:
    return Policy.from_code(store_for(ref.store_uri).get_blob(cid).decode())


def wm_of(ref: RunRef, cid: str) -> WorldModel:
    return WorldModel.from_code(store_for(ref.store_uri).get_blob(cid).decode())


def proposals(ref: RunRef, parent_id: str, policy: Policy, n: int, seed: int) -> list[Proposal]:
    """`n` children of the parent from the policy's operator distribution: `mutate` (no
    crossover) by default; with `proposer='llm'` the chat model writes each child, asked
    for an edit of the operator the policy drew (`rsi_anything_coder.txt`)."""
    source = store_for(ref.store_uri).get_blob(parent_id).decode()
    rng, parent = random.Random(seed), ParentInfo(parent_id, source, None)
    if run_config(ref).proposer == "llm":
        return [llm_child(ref, parent, policy, rng) for _ in range(n)]
    proposer = MutationProposer(EvolveConfig(mutations_per_child=section(ref).mutations_per_child, crossover_rate=0.0),
                                operator_prior=policy.weights())
    return [proposer.propose([parent], rng) for _ in range(n)]


def llm_child(ref: RunRef, parent: ParentInfo, policy: Policy, rng: random.Random) -> Proposal:
    """One LLM-written child asked for an edit of a policy-drawn operator; the proposal's
    operator is that operator (what the bandit credits). An answer that gives no program
    stays a recorded candidate that fails in the sandbox."""
    suite = run_suite(ref)
    operator = rng.choices(OPERATORS, policy.probs)[0]
    hints = json.loads(load_prompt("rsi_anything_operators.json"))
    coder = LLMProposer(run_config(ref).evolve, task_description=f"{suite.candidate}. Edit asked for: "
                        f"{hints[operator]}.", entrypoint=suite.entrypoint, user_prompt="rsi_anything_coder.txt")
    return replace(coder.propose([parent], rng), operator=operator)


def draw(ref: RunRef, r: int, phase: str, batch: int, parent_id: str, policy_id: str, wm_id: str, n: int,
         seed: int, key: str) -> list[RSICandidateRow]:
    """sample + score: `n` children (published as program candidates) with the WM's
    predicted gain each; online only the WM's top pick is `selected`."""
    store, suite = store_for(ref.store_uri), run_suite(ref)
    children = proposals(ref, parent_id, policy_of(ref, policy_id), n, seed)
    parent_source = store.get_blob(parent_id).decode()

    def programs() -> list[CandidateRow]:
        seen, out = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}, []
        for p in children:
            cid = store.put_blob(p.source.encode())
            if cid not in seen:
                seen.add(cid)
                out.append(CandidateRow(run_id=ref.run_id, candidate_id=cid, round=r, parent_ids=[parent_id],
                                        operator=p.operator, proposer=p.proposer, artifact_kind=suite.artifact_kind,
                                        artifact_uri=store.blob_uri(cid), island=-1, summary=p.summary,
                                        **call_cost(p)))
        return out

    once(ref, "candidates", "sample", key, programs)
    wm = wm_of(ref, wm_id)
    features = [code_features(parent_source, p.source, p.operator, p.summary.count(";") + 1) for p in children]
    top = pick(wm, features)

    def rows() -> list[RSICandidateRow]:
        return [RSICandidateRow(run_id=ref.run_id, round=r, phase=phase, batch=batch, seed=run_config(ref).seed,
                                cand_id=store.put_blob(p.source.encode()), parent_id=parent_id, operator=p.operator,
                                policy_ver=policy_id, wm_ver=wm_id, features=list(x), pred_gain=wm.predict(x),
                                selected=phase != "online" or i == top)
                for i, (p, x) in enumerate(zip(children, features))]

    return once(ref, "rsi_candidates", phase, key, rows)


def results(ref: RunRef, r: int, phase: str, rows: list[RSICandidateRow], key: str) -> list[RSIExecutionRow]:
    """execute: the selected children on the public cases; one row per distinct child."""
    chosen = list(dict.fromkeys((c.cand_id, c.parent_id) for c in rows if c.selected))
    scores = measure(ref, key, [c for c, _ in chosen] + [p for _, p in chosen])
    store, clip, n = store_for(ref.store_uri), section(ref).gain_clip, len(public_cases(ref))

    def out() -> list[RSIExecutionRow]:
        return [RSIExecutionRow(
            run_id=ref.run_id, round=r, phase=phase, cand_id=c, parent_id=p, online_score=scores[c],
            parent_score=scores[p], gain=clip_gain(scores[c] - scores[p], clip), hidden_score=None,
            test_calls=n if store.has_part("executions", ref.run_id, "execute", part_key(key, c)) else 0)
            for c, p in chosen]

    return once(ref, "rsi_executions", phase, key, out)


def gains(ref: RunRef) -> dict[tuple[str, str], float]:
    """(cand id, parent id) -> the child's clipped public gain over that parent, for every
    executed child (a gain is a function of the two public scores, so one value per key)."""
    return {(e.cand_id, e.parent_id): e.gain for e in store_for(ref.store_uri).read_rows("rsi_executions", ref.run_id)
            if e.phase != "final"}


def before_distill(row: RSICandidateRow, r: int) -> bool:
    """Whether round `r`'s distill stage (round 0: the warm-up fit) may see the row:
    earlier rounds, and round `r`'s warm-up or online draw (its validation comes after),
    so a rerun sees what the first run saw."""
    return row.round < r or (row.round == r and row.phase in ("warmup", "online"))


def training_data(ref: RunRef, r: int) -> tuple[list[list[float]], list[float]]:
    """(features, gain) of every executed (child, parent) round `r`'s distill may see, each once."""
    known, seen, xs, ys = gains(ref), set(), [], []
    for c in store_for(ref.store_uri).read_rows("rsi_candidates", ref.run_id):
        k = (c.cand_id, c.parent_id)
        if not c.selected or not before_distill(c, r):  # an unpicked child may run later, in a later draw
            continue
        if k in known and k not in seen:
            seen.add(k)
            xs.append(c.features)
            ys.append(known[k])
    return xs, ys


def best_of(ref: RunRef, incumbent: str, ids: list[str]) -> str:
    """The incumbent, or a measured child with a strictly higher public score."""
    scores = public_scores(ref)
    return max([incumbent] + [c for c in ids if c in scores], key=lambda c: (scores[c], c == incumbent))


@task(name="warm-up", **STAGE_OPTIONS)
def warm_up(ref: RunRef) -> tuple[str, str, str]:
    """Round 0: the seed program, the uniform policy, `warmup` children of the seed all
    executed, and WM v0 fitted on them (the zero model for `wm="none"`). Returns
    (policy id, WM id, incumbent id)."""
    store, s, suite = store_for(ref.store_uri), section(ref), run_suite(ref)
    seed = store.put_blob(suite.seed_program().encode())
    once(ref, "candidates", "sample", "seed", lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=seed, round=0, parent_ids=[], operator="seed", proposer="seed",
        artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(seed), island=-1,
        summary="the suite's seed program")])
    measure(ref, "seed", [seed])
    policy = put_artifact(ref, 0, "policy", Policy.uniform().code(), [], "initial", "init", "policy")
    zero = put_artifact(ref, 0, "world_model", WorldModel.zero().code(), [], "zero", "init", "wm-zero")
    rows = draw(ref, 0, "warmup", -1, seed, policy, zero, s.warmup, seed_for(run_config(ref).seed, "warmup"),
                "warmup") if s.warmup else []
    results(ref, 0, "warmup", rows, "warmup")
    xs, ys = training_data(ref, 0)
    wm = WorldModel.zero() if s.wm == "none" else fit_ridge(xs, ys, s.ridge_lambda)
    wm_id = put_artifact(ref, 0, "world_model", wm.code(), [zero], "fit", "init", "wm")
    once(ref, "wm_versions", "init", "wm", lambda: [WMVersionRow(
        run_id=ref.run_id, round=0, ver=wm_id, parent=None, train_pairs=wm.train_pairs, calib_error=None,
        coverage=0.0, n_pairs=0, status="initial")])
    reporter().advance(1 + len(rows), "warm-up")
    return policy, wm_id, best_of(ref, seed, [c.cand_id for c in rows])


@task(name="sample", **STAGE_OPTIONS)
def sample(ref: RunRef, r: int, policy: str, wm: str, incumbent: str) -> list[RSICandidateRow]:
    """sample + score: the policy proposes `candidates_per_round` children of the
    incumbent; the WM predicts each one's gain and marks its top pick."""
    s = section(ref)
    return draw(ref, r, "online", -1, incumbent, policy, wm, s.candidates_per_round,
                seed_for(run_config(ref).seed, "online", r), f"r{r:04d}")


@task(name="execute", **STAGE_OPTIONS)
def execute(ref: RunRef, r: int, rows: list[RSICandidateRow], incumbent: str) -> str:
    """execute: only the top pick on the public cases, a (prediction, actual) pair
    attributed to the WM version that made it. Returns the incumbent (the pick when it
    scores higher)."""
    done = results(ref, r, "online", rows, f"r{r:04d}")
    reporter().advance(1, f"round {r}")
    return best_of(ref, incumbent, [e.cand_id for e in done])
