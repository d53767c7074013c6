"""Stage tasks of the mass loop: seed (generation 0: the single-agent workflow and the
old policy, behaviour-cloned from its scripted runs), inner_generation (sample, execute
and score one generation), distill_policy (the lineage's filtered runs -> SFT examples
-> the new policy) and the lookups the gate reads.

Workflows are ``mass_workflows`` rows whose id is the sha256 of their spec; a policy is
a ``candidates`` row whose id is the sha256 of its weights. Parts are keyed by
generation (``gNNNN``); a generation's ``mass_pairwise`` part is published last, so a
generation whose pairwise part is there is complete and a rerun writes nothing new. The
episodes are our own trusted simulation (workflows compile to our rule menu)."""

from __future__ import annotations

import json
import time

from prefect import task

from schemas.ids import derived_id
from schemas.mass import MassExecutionRow, MassPairwiseRow, MassSFTExampleRow, MassWorkflowRow
from schemas.rows import CandidateRow, TrainStepRow
from suites.toolsim.templates import TEMPLATES
from tasks.harness_loops.menu import OPTION_IDS
from tasks.loops.mass import policy as pol
from tasks.loops.mass.llm import LLMOptimizer, RuleOptimizer, refused_rows
from tasks.loops.mass.loop import Execution, distill, generation, judge, run_workflow
from tasks.loops.mass.workflow import Workflow, from_spec
from tasks.runtime.context import RunRef, cases_by_split, run_config, run_suite, store_for
from tasks.runtime.parts import once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS

STAGE, WF_GATE = "mass", "mass_workflow"


def gen_key(g: int) -> str:
    return f"g{g:04d}"


def optimizer(ref: RunRef) -> RuleOptimizer:
    config = run_config(ref)
    c = config.mass
    if config.proposer == "llm":
        return LLMOptimizer(config.evolve, config.seed, c.children, c.max_roles)
    return RuleOptimizer(config.seed, c.children, c.max_roles)


def train_cases(ref: RunRef) -> list:
    return cases_by_split(run_suite(ref), "train")


def workflow_after(ref: RunRef, g: int) -> Workflow:
    """The workflow the gate kept after generation ``g`` (0: the seed)."""
    if g == 0:
        return Workflow()
    decision = store_for(ref.store_uri).read_part("gate_decisions", ref.run_id, WF_GATE, gen_key(g))[0]
    return from_spec(json.loads(decision.evidence_json)["kept_spec"])


def execution_rows(ref: RunRef, g: int, wf_id: str, runs: list[Execution], split: str,
                   executor: str = "workflow") -> list[MassExecutionRow]:
    return [MassExecutionRow(run_id=ref.run_id, gen=g, exec_id=exec_id(ref, g, wf_id, e.case_id), wf_id=wf_id,
                             task_id=e.case_id, split=split, executor_model=executor, out_tokens=e.calls,
                             delivered=True, success=e.success, delegation_calls=e.delegations) for e in runs]


def exec_id(ref: RunRef, g: int, wf_id: str, case_id: str, repeat: int = 0) -> str:
    return derived_id(ref.run_id, g, wf_id, case_id, repeat)


def policy_row(ref: RunRef, r: int, policy: pol.RulePolicy, parents: list[str], summary: str) -> CandidateRow:
    store = store_for(ref.store_uri)
    blob = store.put_blob(pol.to_bytes(policy))
    return CandidateRow(run_id=ref.run_id, candidate_id=blob, round=r, parent_ids=parents, operator="behaviour_clone",
                        proposer="torch", artifact_kind="weights", artifact_uri=store.blob_uri(blob), island=-1,
                        summary=summary)


def policy_of(ref: RunRef, key: str) -> tuple[CandidateRow, pol.RulePolicy]:
    store = store_for(ref.store_uri)
    row = store.read_part("candidates", ref.run_id, STAGE, key)[0]
    return row, pol.from_bytes(store.get_blob(row.candidate_id))


def clone(examples: list[tuple[str, tuple[int, ...]]], epochs: int, lr: float) -> tuple[pol.RulePolicy, pol.Fit]:
    policy = pol.make_policy(list(TEMPLATES), len(OPTION_IDS))
    fit = pol.behaviour_clone(policy, [t for t, _ in examples], [y for _, y in examples], epochs, lr)
    return policy, fit


@task(name="seed", **STAGE_OPTIONS)
def seed(ref: RunRef) -> str:
    """Generation 0: the single-agent workflow; the old policy cloned from its successful scripted train runs."""
    wf, c = Workflow(), run_config(ref).mass
    once(ref, "mass_workflows", STAGE, gen_key(0), lambda: [MassWorkflowRow(
        run_id=ref.run_id, gen=0, wf_id=wf.wf_id, parent_id=None, operator="seed", spec_json=wf.spec_json(),
        author_model="scripted")])

    def rows():
        runs = run_workflow(wf, train_cases(ref))
        policy, _ = clone([(e.template, e.applied) for e in runs if e.success], c.epochs, c.lr)
        return [policy_row(ref, 0, policy, [], "old policy: cloned from the single-agent workflow's scripted runs")]

    return once(ref, "candidates", STAGE, "p0", rows)[0].candidate_id


@task(name="inner_generation", **STAGE_OPTIONS)
def inner_generation(ref: RunRef, g: int) -> int:
    """sample (children of the kept workflow), execute (train cases), score (pairwise)."""
    store, key = store_for(ref.store_uri), gen_key(g)
    if store.has_part("mass_pairwise", ref.run_id, STAGE, key):
        return len(store.read_part("mass_pairwise", ref.run_id, STAGE, key))
    propose = optimizer(ref)
    out = generation(workflow_after(ref, g - 1), train_cases(ref), propose, g)
    once(ref, "mass_workflows", STAGE, key, lambda: [MassWorkflowRow(
        run_id=ref.run_id, gen=g, wf_id=k.wf_id, parent_id=out.parent.wf_id, operator=op, spec_json=k.spec_json(),
        author_model="rules" if op != "llm_edit" else propose.author) for op, k in dict(
            (k.wf_id, (op, k)) for op, k in out.children).values()])
    once(ref, "mass_executions", STAGE, key, lambda: [r for wf_id, runs in out.executions.items()
                                                       for r in execution_rows(ref, g, wf_id, runs, "train")])
    if run_config(ref).proposer == "llm":  # the answers the optimizer could not use
        once(ref, "candidates", "llm_unusable", key, lambda: refused_rows(ref, g, propose))
    parent_runs = {e.case_id: e for e in out.executions[out.parent.wf_id]}
    pairs = [MassPairwiseRow(run_id=ref.run_id, gen=g, exec_a=exec_id(ref, g, wf_id, e.case_id),
                             exec_b=exec_id(ref, g, out.parent.wf_id, e.case_id), judge_model="checker+cost",
                             winner=judge(e, parent_runs[e.case_id]))
             for wf_id in out.tallies for e in out.executions[wf_id]]
    store.write_part("mass_pairwise", ref.run_id, STAGE, key, pairs)
    reporter().advance(1, f"generation {g}: {len(out.tallies)} children")
    return len(pairs)


def lineage(ref: RunRef, last: int) -> list[Workflow]:
    """The seed and every workflow a gate kept, in order (the final one alone without ``lineage``)."""
    kept: list[Workflow] = []
    for g in range(last + 1):
        wf = workflow_after(ref, g)
        if wf not in kept:
            kept.append(wf)
    return kept if run_config(ref).mass.lineage else [kept[-1]]


@task(name="distill_policy", **STAGE_OPTIONS)
def distill_policy(ref: RunRef, last: int) -> str:
    """distill + register: the lineage's filtered runs -> SFT examples (workflow removed) -> the new policy."""
    store, config = store_for(ref.store_uri), run_config(ref)
    if store.has_part("candidates", ref.run_id, STAGE, "p1"):
        return store.read_part("candidates", ref.run_id, STAGE, "p1")[0].candidate_id
    start, g = time.perf_counter(), last + 1
    examples, runs = distill(lineage(ref, last), train_cases(ref), config.mass.repeats, config.seed)
    ids = [exec_id(ref, g, e.wf_id, e.case_id, e.repeat) for e in examples]
    once(ref, "mass_executions", STAGE, "distill", lambda: [
        MassExecutionRow(run_id=ref.run_id, gen=g, exec_id=i, wf_id=e.wf_id, task_id=e.case_id, split="train",
                         executor_model="workflow", out_tokens=e.execution.calls, delivered=True,
                         success=e.execution.success, delegation_calls=e.execution.delegations)
        for i, e in zip(ids, examples)])
    once(ref, "mass_sft_examples", STAGE, "distill", lambda: [
        MassSFTExampleRow(run_id=ref.run_id, ex_id=derived_id(i, "sft"), exec_id=i, wf_id=e.wf_id, role="policy",
                          dialogue_json=json.dumps({"template": e.template, "rules": dict(zip(OPTION_IDS, e.target))}))
        for i, e in zip(ids, examples)])
    policy, fit = clone([(e.template, e.target) for e in examples], config.mass.epochs, config.mass.lr)
    old = store.read_part("candidates", ref.run_id, STAGE, "p0")[0].candidate_id
    row = policy_row(ref, 1, policy, [old], f"cloned from {len(examples)} filtered runs of {runs}")
    once(ref, "train_steps", STAGE, "distill", lambda: [TrainStepRow(
        run_id=ref.run_id, candidate_id=row.candidate_id, step=1, loss=fit.loss, metrics={"examples": len(examples)},
        tokens=sum(e.execution.calls for e in examples), samples=fit.examples, wall_s=time.perf_counter() - start,
        device="cpu")])
    store.write_part("candidates", ref.run_id, STAGE, "p1", [row])
    return row.candidate_id
