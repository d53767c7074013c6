"""DENSE's stages at their Prefect boundaries: sample (the starter harness), execute (the
initial attempts), distill (one feedback document per method from the stored initial
trajectories: candidates, ``tree_nodes``, ``issues``) and execute (the retries). Every
stage publishes its parts once (`tasks.runtime.parts.once`), keyed by stage and repeat,
so a retry or `ratchet resume` recomputes nothing it holds.

Tables: ``attempts`` (one row per initial attempt and per retry), ``steps`` (every
attempt's trajectory, parts ``initial``/``retry`` per repeat), ``candidates`` (the starter
harness, and every feedback document: a memory version whose id is its content hash),
``tree_nodes`` and ``issues`` (the trees of ``tree`` and ``tree_nsr``)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from prefect import task

from schemas.ids import derived_id
from schemas.loops import DenseRun
from schemas.rows import AttemptRow, CandidateRow, IssueRow, StepRow, TreeNodeRow
from suites.base import Case
from suites.toolsim.episode import Episode, run_episode
from suites.toolsim.harness import load_harness
from tasks.loops.dense.llm import llm_writer
from tasks.loops.dense.receiver import skill_name, starter_harness
from tasks.loops.dense.refit import (RECEIVER, feedback, initial_attempt, phase_case, read_tokens, retry_attempt,
                                     rule_writer)
from tasks.loops.dense.tree import build_tree
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

FEEDBACK_KIND = "memory"
TREES = {"tree": True, "tree_nsr": False}
"""Methods whose document is a tree, and whether it is reconciled."""


def config_of(ref: RunRef) -> DenseRun:
    return run_config(ref)


def tasks_of(ref: RunRef) -> list[Case]:
    return cases_by_split(run_suite(ref), *config_of(ref).dense.splits)


def repeat_key(repeat: int) -> str:
    return f"r{repeat:02d}"


def execution_id(ref: RunRef, task_id: str, repeat: int, phase: str, method: str) -> str:
    return derived_id(ref.run_id, task_id, repeat, phase, method)


def document_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True).encode()


@task(name="sample", **STAGE_OPTIONS)
def publish_starter(ref: RunRef) -> str:
    """sample: the receiver's starter harness, once, as the run's round-0 candidate."""
    store = store_for(ref.store_uri)
    blob = store.put_blob(document_bytes(starter_harness()))
    once(ref, "candidates", "sample", "starter", lambda: [CandidateRow(
        run_id=ref.run_id, candidate_id=blob, round=0, parent_ids=[], operator="starter", proposer="fixed",
        artifact_kind="rules", artifact_uri=store.blob_uri(blob), island=-1,
        summary="starter harness: generic fault rules and every template's default plan retried once")])
    return blob


def _steps(ref: RunRef, execution: str, episode: Episode) -> list[StepRow]:
    return [StepRow(run_id=ref.run_id, execution_id=execution, **step) for step in episode.steps]


def _attempt(ref: RunRef, case: Case, repeat: int, phase: str, method: str, fb_id: str | None, episode: Episode,
             read: int) -> AttemptRow:
    return AttemptRow(run_id=ref.run_id, task_id=case.case_id, split=case.split, template=case.payload["template"],
                      receiver=RECEIVER, repeat=repeat, phase=phase, feedback_method=method, fb_id=fb_id,
                      execution_id=execution_id(ref, case.case_id, repeat, phase, method),
                      passed=bool(episode.evaluation.success), progress=episode.evaluation.progress, tokens=read,
                      tool_calls=episode.tool_calls, steps=len(episode.steps))


@task(name="execute_initial", **STAGE_OPTIONS)
def execute_initial(ref: RunRef, repeat: int) -> None:
    """execute: every task's initial attempt of repeat ``repeat`` (outcomes recorded in
    ``attempts`` for the analysis; no feedback method but ``labelled`` reads them)."""
    seed, key = config_of(ref).seed, repeat_key(repeat)
    runs = [(case, initial_attempt(case, seed, repeat)) for case in tasks_of(ref)]
    once(ref, "steps", "initial", key, lambda: [
        row for case, episode in runs
        for row in _steps(ref, execution_id(ref, case.case_id, repeat, "initial", "initial"), episode)])
    once(ref, "attempts", "initial", key, lambda: [
        _attempt(ref, case, repeat, "initial", "initial", None, episode, 0) for case, episode in runs])


def stored_initial(ref: RunRef, repeat: int) -> dict[str, tuple[dict[str, Any], ...]]:
    """task id -> its initial trajectory of ``repeat``, read back from ``steps``."""
    by_execution: dict[str, list[dict[str, Any]]] = {}
    for row in store_for(ref.store_uri).read_part("steps", ref.run_id, "initial", repeat_key(repeat)):
        by_execution.setdefault(row.execution_id, []).append(row.model_dump(exclude={"run_id", "execution_id"}))
    return {case.case_id: tuple(sorted(by_execution.get(execution_id(ref, case.case_id, repeat, "initial",
                                                                      "initial"), []), key=lambda s: s["step"]))
            for case in tasks_of(ref)}


class _Stored:
    """An initial episode as the distill stage sees it: its stored steps only."""

    def __init__(self, steps: Sequence[dict[str, Any]]) -> None:
        self.steps = tuple(steps)


def _documents(ref: RunRef, repeat: int) -> list[tuple[Case, str, dict[str, Any]]]:
    config = config_of(ref)
    section, writer = config.dense, llm_writer(config.evolve) if config.proposer == "llm" else rule_writer
    trajectories = stored_initial(ref, repeat)
    out = []
    for case in tasks_of(ref):
        for method in section.methods:
            if method == "labelled":  # the hidden verifier's verdict: the deterministic episode, re-simulated
                episode = run_episode(phase_case(case, config.seed, repeat, "initial").payload,
                                      load_harness(starter_harness()))
            else:
                episode = _Stored(trajectories[case.case_id])
            out.append((case, method, feedback(method, case, episode, config.seed, section.labelled_edits,
                                               repeat, writer)))
    return out


@task(name="distill", **STAGE_OPTIONS)
def distill_feedback(ref: RunRef, repeat: int, starter_id: str) -> None:
    """distill: every method's feedback document from repeat ``repeat``'s stored initial
    trajectories, each a memory candidate (content id), and the trees' nodes and issues."""
    store, key, config = store_for(ref.store_uri), repeat_key(repeat), config_of(ref)
    documents = _documents(ref, repeat)

    def candidates() -> list[CandidateRow]:
        rows: dict[str, CandidateRow] = {}
        for case, method, document in documents:
            blob = store.put_blob(document_bytes(document))
            rows.setdefault(blob, CandidateRow(
                run_id=ref.run_id, candidate_id=blob, round=repeat + 1, parent_ids=[starter_id], operator=method,
                proposer=_proposer(config, method), artifact_kind=FEEDBACK_KIND, artifact_uri=store.blob_uri(blob),
                island=-1, summary=f"{method} feedback for {case.case_id} (repeat {repeat}): "
                                   f"{read_tokens(document)} tokens"))
        return list(rows.values())

    found = once(ref, "candidates", "distill", key, candidates)
    known = {row.candidate_id for row in found}
    trees = [(case, method, store.put_blob(document_bytes(d))) for case, method, d in documents if method in TREES]
    nodes, issues = _tree_rows(ref, repeat, trees, stored_initial(ref, repeat), known)
    once(ref, "tree_nodes", "distill", key, lambda: nodes)
    once(ref, "issues", "distill", key, lambda: issues)


def _proposer(config: DenseRun, method: str) -> str:
    if method == "labelled":
        return "rules"
    return "llm" if config.proposer == "llm" and method in TREES else "dense_rules"


def _tree_rows(ref: RunRef, repeat: int, trees, trajectories, known) -> tuple[list[TreeNodeRow], list[IssueRow]]:
    """Rows of the rule writer's trees (an LLM's tree is only in its document)."""
    nodes: dict[tuple[str, str], TreeNodeRow] = {}
    issues: dict[tuple[str, str, int], IssueRow] = {}
    for case, method, fb_id in trees:
        template = case.payload["template"]
        tree = build_tree(template, trajectories[case.case_id], skill_name(template), reconcile=TREES[method])
        for node in tree.nodes:
            summary = (f"entries {node.entries}, failures {node.failures}"
                       + (f", shortcut {node.working['name']}" if node.working else ""))
            nodes.setdefault((fb_id, node.node_id), TreeNodeRow(
                run_id=ref.run_id, fb_id=fb_id, task_id=case.case_id, repeat=repeat, feedback_method=method,
                node_id=node.node_id, parent=node.parent, subgoal=node.subgoal, status=node.status,
                evidence_step_ids=list(node.step_ids), summary=summary))
            for issue in node.issues:
                issues.setdefault((fb_id, node.node_id, issue.step), IssueRow(
                    run_id=ref.run_id, fb_id=fb_id, task_id=case.case_id, node_id=node.node_id, step=issue.step,
                    issue=issue.label, message=issue.message, closed=issue.closed,
                    closing_evidence=issue.closing_step))
    return list(nodes.values()), list(issues.values())


def documents_of(ref: RunRef, repeat: int) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """(task, method) -> (fb_id, document) of repeat ``repeat``, read back from the store."""
    store = store_for(ref.store_uri)
    out = {}
    for row in store.read_part("candidates", ref.run_id, "distill", repeat_key(repeat)):
        document = json.loads(store.get_blob(row.candidate_id))
        out[(document["task"], document["method"])] = (row.candidate_id, document)
    return out


@task(name="execute_retry", **STAGE_OPTIONS)
def execute_retries(ref: RunRef, repeat: int) -> None:
    """execute: every task's retry under every method's feedback, on the same retry noise."""
    config, key = config_of(ref), repeat_key(repeat)
    documents = documents_of(ref, repeat)
    runs = [(case, method, *documents[(case.case_id, method)]) for case in tasks_of(ref)
            for method in config.dense.methods]
    episodes = [(case, method, fb_id, document, retry_attempt(case, document, config.seed, repeat))
                for case, method, fb_id, document in runs]
    once(ref, "steps", "retry", key, lambda: [
        row for case, method, _, _, episode in episodes
        for row in _steps(ref, execution_id(ref, case.case_id, repeat, "retry", method), episode)])
    once(ref, "attempts", "retry", key, lambda: [
        _attempt(ref, case, repeat, "retry", method, fb_id, episode, read_tokens(document))
        for case, method, fb_id, document, episode in episodes])
    reporter().advance(1, f"repeat {repeat}")
