"""dream_rsi's stages at their Prefect boundaries. Each publishes its parts once
(`tasks.runtime.parts.once`), and a real round's search is deterministic given what it
already published, so a retry or `ratchet resume` re-walks the published expansions
and continues where it stopped."""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone

from prefect import task

from schemas.configs import EvolveConfig
from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow, DistillateRow, GateDecisionRow, RegistryRow
from tasks.gate.best_so_far import GateOutcome
from tasks.gate.rows import decision_row
from tasks.loops.dream_rsi.rewriter import pick, rewrite
from tasks.proposers.base import ParentInfo
from tasks.proposers.mutate import MutationProposer
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.search.archive import split_means
from tasks.search.schedule import Node, Policy, Rehearsal, SearchTrace, search
from tasks.search.trees import NODE_KIND, REPLAY_KIND, ROUND_KIND, node_trees, run_trees
from tasks.stages.execute import run_candidates
from tasks.stages.register import holdout_score
from tasks.stages.score import score_candidates

GATE = "dream_replay"
DUPLICATE_RETRIES = 8


def section(ref: RunRef):
    return run_config(ref).dream_rsi


def policy_name(ref: RunRef) -> str:
    return f"{run_config(ref).suite}/dream_rsi-policy"


def evaluate(ref: RunRef, tag: str, candidate_ids: list[str], count: bool = True) -> dict[str, float]:
    """Execute and score candidates on the train and select cases (once); their select
    means. `count`: advance the progress bar by them."""
    suite = run_suite(ref)
    run_candidates(ref, tag, candidate_ids, cases_by_split(suite, "train", "select"))
    score_candidates(ref, tag, candidate_ids)
    if count:
        reporter().advance(len(candidate_ids), tag)
    means = split_means(store_for(ref.store_uri).read_part("scores", ref.run_id, "score", tag), suite.primary_metric)
    floor = suite.score(suite.cases()[0], None).metrics[suite.primary_metric]
    return {c: means.get((c, "select"), floor) for c in candidate_ids}


@task(name="init-policy", **STAGE_OPTIONS)
def initial(ref: RunRef) -> tuple[str, str]:
    """Round 0's candidates: the initial policy and the suite's seed program (the root of
    every real round's tree), evaluated once. Returns (policy id, root id)."""
    store, s, suite = store_for(ref.store_uri), section(ref), run_suite(ref)

    def rows() -> list[CandidateRow]:
        policy = store.put_blob(Policy(s.ucb_c, s.width, s.patience).code().encode())
        seed = store.put_blob(suite.seed_program().encode())
        return [
            CandidateRow(run_id=ref.run_id, candidate_id=policy, round=0, parent_ids=[], operator="initial",
                         proposer="config", artifact_kind="scheduler", artifact_uri=store.blob_uri(policy),
                         island=-1, summary="the initial scheduling policy"),
            CandidateRow(run_id=ref.run_id, candidate_id=seed, round=0, parent_ids=[], operator="seed",
                         proposer="seed", artifact_kind=suite.artifact_kind, artifact_uri=store.blob_uri(seed),
                         island=-1, summary="the suite's seed program: every real round's root"),
        ]

    policy, seed = once(ref, "candidates", "sample", "init", rows)
    evaluate(ref, "root", [seed.candidate_id])
    return policy.candidate_id, seed.candidate_id


class RealOracle:
    """The frozen code agent behind a real round: each request mutates the node's program
    into new children (never a program the run already holds), evaluates them and reveals
    their select scores. Expansion k of round r is part `rNNNN-sKKK`."""

    def __init__(self, ref: RunRef, round_index: int, policy_id: str) -> None:
        self.ref, self.round, self.policy_id, self.step = ref, round_index, policy_id, 0
        store = store_for(ref.store_uri)
        self.seen = {c.candidate_id for c in store.read_rows("candidates", ref.run_id) if c.round < round_index}
        self.proposer = MutationProposer(EvolveConfig(mutations_per_child=section(ref).mutations_per_child))

    def __call__(self, node: Node, start: int, width: int) -> list[Node | None]:
        key = f"r{self.round:04d}-s{self.step:03d}"
        self.step += 1
        rows = once(self.ref, "candidates", "sample", key, lambda: self._children(node, width, key))
        self.seen.update(r.candidate_id for r in rows)
        ids = [r.candidate_id for r in rows]
        scores = evaluate(self.ref, key, ids) if ids else {}
        return [Node(c, node.node_id, scores[c]) for c in ids] + [None] * (width - len(ids))

    def _children(self, node: Node, width: int, key: str) -> list[CandidateRow]:
        store, suite = store_for(self.ref.store_uri), run_suite(self.ref)
        parent = ParentInfo(node.node_id, store.get_blob(node.node_id).decode(), node.score)
        rng = random.Random(seed_for(run_config(self.ref).seed, "dream", self.round, key))
        rows, fresh = [], set()
        for _ in range(width):
            for _ in range(DUPLICATE_RETRIES):
                proposal = self.proposer.propose([parent], rng)
                cid = content_id(proposal.source)
                if cid not in self.seen and cid not in fresh:
                    break
            else:
                continue  # the agent kept writing known programs: fewer children
            fresh.add(store.put_blob(proposal.source.encode()))
            rows.append(CandidateRow(
                run_id=self.ref.run_id, candidate_id=cid, round=self.round, parent_ids=[node.node_id],
                operator=proposal.operator, proposer=proposal.proposer, artifact_kind=suite.artifact_kind,
                artifact_uri=store.blob_uri(cid), island=self.step - 1,
                summary=f"{proposal.summary} | policy={self.policy_id[:12]}"))
        return rows


def node_rows(ref: RunRef, round_index: int, policy_id: str, trace: SearchTrace) -> list[DistillateRow]:
    """The spec's `nodes` table: one `dream_node` distillate per revealed node."""
    tree_id = f"{ref.run_id}/r{round_index:04d}"
    return [
        DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "node", round_index, n.node_id),
                      round=round_index, kind=NODE_KIND, uri=None, source_execution_ids=[], support=1,
                      status="active", content=json.dumps(
                          {"tree_id": tree_id, "order": i, "node_id": n.node_id, "parent_node_id": n.parent_id,
                           "policy_id": policy_id, "code_ref": n.node_id, "score": n.score,
                           "agent_calls": 0 if n.parent_id is None else 1}, sort_keys=True))
        for i, n in enumerate(trace.revealed)
    ]


@task(name="execute", **STAGE_OPTIONS)
def real_round(ref: RunRef, round_index: int, policy_id: str, root_id: str, rewriter_calls: int) -> dict:
    """Run the policy for real from the seed program; record its tree and the spec's
    `real_rounds` row (discovery calls, best score, held-out score of the best program,
    attempts until the initial policy's best was reached)."""
    store, s = store_for(ref.store_uri), section(ref)
    key = f"r{round_index:04d}"
    if store.has_part("distillates", ref.run_id, "distill", key):
        rows = store.read_part("distillates", ref.run_id, "distill", key)
        return json.loads(next(r for r in rows if r.kind == ROUND_KIND).content)
    root_score = evaluate(ref, "root", [root_id], count=False)[root_id]
    policy = Policy.from_code(store.get_blob(policy_id).decode())
    trace = search(policy, Node(root_id, None, root_score), RealOracle(ref, round_index, policy_id), s.attempts)
    reporter().advance(s.attempts - trace.attempts, f"round {round_index}: the policy stopped")  # the bar's unused share
    best = max(trace.revealed, key=lambda n: n.score)
    first = round_record(ref, 0) if round_index else None
    target = first["best_score"] if first else best.score
    record = {"round": round_index, "policy_id": policy_id, "discovery_calls": trace.attempts,
              "batches": trace.batches, "best_score": best.score, "best_candidate": best.node_id,
              "heldout_metric": holdout_score(ref, best.node_id), "rewriter_calls": rewriter_calls,
              "target": target, "calls_to_target": trace.attempts_to(target)}
    summary = DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "real", round_index),
                            round=round_index, kind=ROUND_KIND, content=json.dumps(record, sort_keys=True), uri=None,
                            source_execution_ids=[], support=trace.attempts, status="active")
    once(ref, "distillates", "distill", key, lambda: [*node_rows(ref, round_index, policy_id, trace), summary])
    return record


def round_record(ref: RunRef, round_index: int) -> dict:
    rows = store_for(ref.store_uri).read_part("distillates", ref.run_id, "distill", f"r{round_index:04d}")
    return json.loads(next(r for r in rows if r.kind == ROUND_KIND).content)


def replay_pool(ref: RunRef, round_index: int) -> list:
    """This run's trees of earlier rounds, then those of `replay_runs`."""
    store, metric = store_for(ref.store_uri), run_suite(ref).primary_metric
    trees = node_trees(store.read_rows("distillates", ref.run_id), before_round=round_index)
    for other in section(ref).replay_runs:
        trees.extend(run_trees(store, other, metric))
    return trees


@task(name="sample", **STAGE_OPTIONS)
def dream(ref: RunRef, round_index: int, policy_id: str) -> list[Rehearsal]:
    """sample (dream): TPE rewrites the current policy, every candidate rehearsed on the
    replay pool; the current policy is always a candidate (first). Policies new to the
    run are published as `scheduler` candidates; each rehearsal on each tree is a
    `dream_replay_eval` distillate (the spec's replay_evals)."""
    store, s = store_for(ref.store_uri), section(ref)
    old = Policy.from_code(store.get_blob(policy_id).decode())
    trees = replay_pool(ref, round_index)
    rehearsals = rewrite(old, trees, s.rewriter_trials, seed_for(run_config(ref).seed, "rewrite", round_index))
    key = f"r{round_index:04d}"
    known = {c.candidate_id for c in store.read_rows("candidates", ref.run_id)}

    def policies() -> list[CandidateRow]:
        rows = []
        for r in rehearsals[1:]:
            cid = store.put_blob(r.policy.code().encode())
            if cid not in known:
                known.add(cid)
                rows.append(CandidateRow(
                    run_id=ref.run_id, candidate_id=cid, round=round_index, parent_ids=[policy_id], operator="tpe",
                    proposer="optuna", artifact_kind="scheduler", artifact_uri=store.blob_uri(cid), island=-1,
                    summary=f"{r.policy.code()} | replay cost {r.score:.4f} on {len(trees)} trees"))
        return rows

    def evals() -> list[DistillateRow]:
        return [DistillateRow(run_id=ref.run_id, distillate_id=derived_id(ref.run_id, "replay", round_index, pid, e.tree_id),
                              round=round_index, kind=REPLAY_KIND, uri=None, source_execution_ids=[], support=1,
                              status="active", content=json.dumps({"policy_id": pid, **e.__dict__}, sort_keys=True))
                for r in rehearsals for pid in [content_id(r.policy.code())] for e in r.evals]

    once(ref, "candidates", "sample", key, policies)
    once(ref, "distillates", "dream", key, evals)
    return rehearsals


@task(name="gate", **STAGE_OPTIONS)
def gate_policy(ref: RunRef, round_index: int, policy_id: str, rehearsals: list[Rehearsal]) -> str:
    """gate: the best replay cost wins; the current policy wins ties (it is rehearsed
    first). One decision per rehearsed policy, its evidence the replay figures."""
    chosen = pick(rehearsals)
    baseline = rehearsals[0]
    scorer = run_suite(ref).scorer_version()

    def rows() -> list[GateDecisionRow]:
        out = []
        for r in rehearsals[1:]:
            cid = content_id(r.policy.code())
            accept = r is chosen
            evidence = {"policy": json.loads(r.policy.code()), "replay_cost": r.score, "baseline_cost": baseline.score,
                        "trees": len(r.evals), "unrecorded_requests": sum(e.unrecorded_requests for e in r.evals),
                        "attempts": sum(e.attempts for e in r.evals)}
            outcome = GateOutcome(
                decision="accept" if accept else "reject",
                reason=("lowest replay cost" if accept else "replay cost not below the best") +
                       f": {r.score:.4f} vs current {baseline.score:.4f}",
                improved_cases=[], regressed_cases=[], select_score=None, baseline_score=None,
                delta=r.score - baseline.score, ci_low=None, ci_high=None, n_cases=len(r.evals),
                evidence_json=json.dumps(evidence, sort_keys=True))
            out.append(decision_row(ref, round_index, cid, GATE, policy_id, outcome,
                                    id_parts=(round_index, cid, GATE), scorer_version=scorer))
        return out

    once(ref, "gate_decisions", "gate", f"r{round_index:04d}", rows)
    return content_id(chosen.policy.code())


@task(name="register", **STAGE_OPTIONS)
def register_policy(ref: RunRef, round_index: int, policy_id: str, previous_id: str) -> str:
    """register: a new policy becomes the `champion` of `<suite>/dream_rsi-policy`; every
    policy version stays a candidate."""
    if policy_id == previous_id:
        return policy_id
    store = store_for(ref.store_uri)
    decision = derived_id(ref.run_id, round_index, policy_id, GATE)

    def rows() -> list[RegistryRow]:
        version = len(store.read_rows("registry", ref.run_id)) + 1
        return [RegistryRow(run_id=ref.run_id, name=policy_name(ref), version=version, candidate_id=policy_id,
                            stage="stable", alias="champion", decision_id=decision, select_score=None,
                            holdout_score=None, event_at=datetime.now(timezone.utc))]

    once(ref, "registry", "register", f"r{round_index:04d}", rows)
    return policy_id
