"""algoevo's skill and search stages at their Prefect boundaries. One task's search is one
Prefect task; inside it every evaluation is published as it happens (its candidate, its
executions and scores through the platform's sandboxed execute and trusted score stages,
then its experience card), each part once (`tasks.runtime.parts.once`). The search is
deterministic given what it published (per-evaluation seeds), so a retry or `ratchet
resume` re-walks the published evaluations and continues where it stopped."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from statistics import fmean

from prefect import task

from schemas.algoevo import AECardRow, AENodeRow
from schemas.configs import EvolveConfig
from schemas.ids import content_id, derived_id, seed_for
from schemas.rows import CandidateRow
from suites.base import Suite
from tasks.loops.algoevo.logic import Card, TreeNode, add_child, best_so_far, root_node, skill_document, ucb_pick, \
    ucb_values
from tasks.proposers.base import ParentInfo, ProposerError
from tasks.proposers.mutate import MutationProposer
from tasks.runtime.context import RunRef, cases_by_split, make_suite, run_config, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS
from tasks.stages.execute import run_candidates
from tasks.stages.score import score_candidates

DRAWS = 8
"""Proposals drawn per evaluation before giving up on a child the tree does not hold."""


def section(ref: RunRef):
    return run_config(ref).algoevo


@dataclass(frozen=True)
class TaskAt:
    """The task at `position` of the order: its suite, its round and its split."""

    position: int
    name: str
    round: int
    split: str
    suite: Suite

    @property
    def key(self) -> str:
        return f"t{self.position:02d}"

    @property
    def exec_seed(self) -> int:
        """Executions of a later round of a task carry the run's seed + round (distinct ids)."""
        return self.round


def task_at(ref: RunRef, position: int) -> TaskAt:
    config = run_config(ref)
    tasks = config.algoevo.tasks
    name = tasks[position]
    return TaskAt(position, name, tasks[:position].count(name),
                  "heldout" if position == len(tasks) - 1 else "source", make_suite(config, name))


@task(name="init-skill", **STAGE_OPTIONS)
def init_skill(ref: RunRef) -> str:
    """The initial design skill (no promoted pattern): a `skills` candidate."""
    store, s = store_for(ref.store_uri), section(ref)
    body = json.dumps(skill_document([], [], s.boost, None), sort_keys=True)

    def rows() -> list[CandidateRow]:
        sid = store.put_blob(body.encode())
        return [CandidateRow(run_id=ref.run_id, candidate_id=sid, round=-1, parent_ids=[], operator="initial",
                             proposer="config", artifact_kind="skills", artifact_uri=store.blob_uri(sid), island=-1,
                             summary="the initial design skill: every operator family at weight 1")]

    return once(ref, "candidates", "sample", "skill-init", rows)[0].candidate_id


def evaluate(ref: RunRef, t: TaskAt, tag: str, candidate_id: str, split: str = "select") -> tuple[float, bool]:
    """Execute (sandbox) and score (trusted) one program on the task's `split` cases, once:
    its mean primary metric and whether every case ran and scored valid."""
    run_config(ref)  # the run's config is cached before the sandbox threads start
    cases = cases_by_split(t.suite, split)
    seed = run_config(ref).seed + t.exec_seed
    run_candidates(ref, tag, [candidate_id], cases, seed=seed, suite=t.suite)
    score_candidates(ref, tag, [candidate_id], suite=t.suite)
    rows = [r for r in store_for(ref.store_uri).read_part("scores", ref.run_id, "score", tag)
            if r.metric == t.suite.primary_metric]
    return fmean(r.value for r in rows), all(r.valid for r in rows)


def known_before(ref: RunRef, t: TaskAt) -> set[str]:
    """Candidates published by the tasks before this one (never proposed again)."""
    return {c.candidate_id for c in store_for(ref.store_uri).read_rows("candidates", ref.run_id)
            if 0 <= c.round < t.position}


def root_program(ref: RunRef, t: TaskAt, inherit: bool) -> str:
    """The task's starting program: its suite's seed, or (a later round with
    `inherit_code`) the previous round's best program."""
    if inherit and t.round > 0:
        store = store_for(ref.store_uri)
        earlier = [r for r in store.read_rows("ae_task_runs", ref.run_id)
                   if r.task_id == t.name and r.position < t.position]
        return store.get_blob(max(earlier, key=lambda r: r.position).best_candidate).decode()
    return t.suite.seed_program()


def candidate_row(ref: RunRef, t: TaskAt, cid: str, parents: list[str], operator: str, summary: str) -> CandidateRow:
    store = store_for(ref.store_uri)
    return CandidateRow(run_id=ref.run_id, candidate_id=cid, round=t.position, parent_ids=parents, operator=operator,
                        proposer="mutate" if parents else "seed", artifact_kind=t.suite.artifact_kind,
                        artifact_uri=store.blob_uri(cid), island=-1, summary=summary)


def propose(ref: RunRef, t: TaskAt, k: int, parent: TreeNode, weights: dict[str, float], seen: set[str]):
    """A child of `parent` the run does not hold yet, by the skill-weighted operator
    families; None after DRAWS tries. Seeded by (run seed, task, round, evaluation index),
    not by position, so a task searched with the same skill draws the same children
    whatever came before it (the findings' initial-skill arm runs the held-out task alone)."""
    store = store_for(ref.store_uri)
    proposer = MutationProposer(EvolveConfig(mutations_per_child=section(ref).mutations_per_child),
                                operator_prior=weights)
    rng = random.Random(seed_for(run_config(ref).seed, "algoevo", t.name, t.round, k))
    info = ParentInfo(parent.node_id, store.get_blob(parent.node_id).decode(), parent.score)
    for _ in range(DRAWS):
        try:
            proposal = proposer.propose([info], rng)
        except ProposerError:
            continue
        if content_id(proposal.source) not in seen:
            return proposal
    return None


def card_row(ref: RunRef, t: TaskAt, card: Card) -> AECardRow:
    return AECardRow(run_id=ref.run_id, id=derived_id(ref.run_id, "card", t.position, card.eval_idx),
                     task_id=t.name, position=t.position, round=t.round, node=card.node, parent=card.parent, family=card.family,
                     modification=json.dumps({"family": card.family, "params": card.params}, sort_keys=True),
                     conditions=json.dumps(card.conditions(), sort_keys=True), rationale=card.rationale(),
                     before=card.before, after=card.after, delta=card.delta, eval_idx=card.eval_idx)


def step(ref: RunRef, t: TaskAt, k: int, tree: dict[str, TreeNode], skill: tuple[str, dict], seen: set[str]):
    """Evaluation k of the task: pick a node by UCB, propose a child with the skill's
    family prior, execute and score it, write its card. The tree after it (unchanged
    when no new child could be drawn)."""
    s, (skill_id, weights) = section(ref), skill
    picked = ucb_pick(tree, s.ucb_c)
    parent = tree[picked]
    tag = f"{t.key}-e{k:04d}"

    def rows() -> list[CandidateRow]:
        proposal = propose(ref, t, k, parent, weights, seen)
        if proposal is None:
            return []
        cid = store_for(ref.store_uri).put_blob(proposal.source.encode())
        return [candidate_row(ref, t, cid, [picked], proposal.operator, proposal.summary)]

    published = once(ref, "candidates", "sample", tag, rows)
    if not published:
        return tree
    child = published[0]
    seen.add(child.candidate_id)
    score, valid = evaluate(ref, t, tag, child.candidate_id)
    card = Card(task_id=t.name, eval_idx=len(tree), node=child.candidate_id, parent=picked, family=child.operator,
                params=child.summary, before=parent.score, after=score, valid=valid, parent_depth=parent.depth,
                parent_visits=parent.visits, ucb=ucb_values(tree, s.ucb_c)[picked],
                prior_weight=weights.get(child.operator, 1.0), skill_ver=skill_id)
    once(ref, "ae_cards", "distill", tag, lambda: [card_row(ref, t, card)])
    return add_child(tree, child.candidate_id, picked, score, valid)


def node_rows(ref: RunRef, t: TaskAt, tree: dict[str, TreeNode]) -> list[AENodeRow]:
    return [AENodeRow(run_id=ref.run_id, id=n.node_id, task_id=t.name, round=t.round, parent=n.parent, score=n.score,
                      valid=n.valid, visits=n.visits, best=None if n.best == float("-inf") else n.best, depth=n.depth)
            for n in sorted(tree.values(), key=lambda n: n.order)]


@task(name="search", **STAGE_OPTIONS)
def search_task(ref: RunRef, position: int, skill_id: str) -> dict:
    """sample / execute / score / distill for one task: `--budget` evaluations, each a
    UCB-picked node's child drawn with the loaded skill's operator-family prior, each
    followed by its experience card; the tree's node statistics at the end. Returns the
    task's record (root, best, evaluations until the best, the best-so-far curve)."""
    config, store = run_config(ref), store_for(ref.store_uri)
    t = task_at(ref, position)
    weights = json.loads(store.get_blob(skill_id).decode())["family_weights"]
    seen = known_before(ref, t)
    source = root_program(ref, t, config.algoevo.inherit_code)
    root_id = content_id(source)
    inherited = source != t.suite.seed_program()
    once(ref, "candidates", "sample", f"{t.key}-root", lambda: [] if root_id in seen else [candidate_row(
        ref, t, store.put_blob(source.encode()), [], "inherit" if inherited else "seed",
        "the previous round's best program" if inherited else "the task's seed program")])
    seen.add(root_id)
    score, valid = evaluate(ref, t, f"{t.key}-e0000", root_id)
    tree = {root_id: root_node(root_id, score, valid)}
    reporter().advance(1, f"{t.name}: root")
    for k in range(1, config.budget + 1):
        tree = step(ref, t, k, tree, (skill_id, weights), seen)
        reporter().advance(1, f"{t.name}: evaluation {k}")
    once(ref, "ae_nodes", "distill", f"{t.key}-nodes", lambda: node_rows(ref, t, tree))
    ordered = sorted(tree.values(), key=lambda n: n.order)
    curve = best_so_far([n.score if n.valid else None for n in ordered])
    best = max((n for n in ordered if n.valid), key=lambda n: (n.score, -n.order), default=ordered[0])
    return {"position": position, "task_id": t.name, "round": t.round, "split": t.split, "skill_ver": skill_id,
            "inherited_code": inherited, "evals": len(ordered) - 1, "root_score": ordered[0].score,
            "best": best.score, "best_candidate": best.node_id, "evals_to_best": best.order, "curve": curve}
