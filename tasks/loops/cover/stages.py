"""cover's stages at their Prefect boundaries. Each publishes its part once
(`tasks.runtime.parts.once`), so a retry or `ratchet resume` continues where it stopped.

Tables (distillate kinds, one JSON `content` each; `ratchet sql` reads them with
``json_extract``): `cover_outcomes` (per problem, the sandbox outcomes of every program),
`cover_program` (step, prob_id, prog_id, operator, candidate_id, gt_pass_frac),
`cover_test` (step, prob_id, test_id, generator, valid, input_hash, kept, drop_reason,
mi, cov_sign, reward, trivial), `cover_llm_inputs` (the llm path: per problem, the argument lists the endpoint wrote, why
none, its tokens), `cover_exec` (step, prob_id, prog_id, the pass vector
over the step's tests: the exec matrix, one row per program), `cover_policy` (step,
role, logits, probs after the step)."""

from __future__ import annotations

import json

import numpy as np
from prefect import task

from schemas.configs import SandboxConfig
import random

from schemas.ids import content_id, seed_for
from schemas.rows import DistillateRow
from suites.codemidas.suite import kept_tasks
from suites.executors import make_executor
from tasks.loops.cover.problems import OPERATORS, Problem, problem
from tasks.loops.cover.rounds import Arm, train_step
from tasks.loops.cover.sandbox import run_programs
from tasks.proposers.test_inputs import llm_arguments
from tasks.runtime.context import RunRef, run_config, store_for
from tasks.runtime.parts import distillate, once
from tasks.runtime.progress import reporter
from tasks.runtime.retry import STAGE_OPTIONS


def section(ref: RunRef):
    return run_config(ref).cover


def arm_of(ref: RunRef) -> Arm:
    s = section(ref)
    return Arm(s.reward, s.filter, s.code_lr, s.test_lr)


@task(name="execute", **STAGE_OPTIONS)
def execute_problems(ref: RunRef) -> list[Problem]:
    """execute: every problem's original and mutants run in the sandbox (the run's sandbox
    config, each case capped at `case_timeout_s`) on its GT tests and pool inputs; on the
    llm path the endpoint first writes the problem's ``llm`` pool (recorded, so a rerun
    reads the same inputs)."""
    config, s = run_config(ref), section(ref)
    sandbox = SandboxConfig(**{**config.sandbox.model_dump(), "timeout_s": min(config.sandbox.timeout_s,
                                                                              s.case_timeout_s)})
    out = []
    for task_row in kept_tasks()[:s.problems]:
        key = f"p{len(out):03d}"
        llm_pool = None
        if config.proposer == "llm":
            written = once(ref, "distillates", "llm_inputs", key, lambda t=task_row: [llm_row(ref, t)])
            llm_pool = json.loads(written[0].content)["inputs"]
        p = problem(task_row, config.seed, s.pool_size, llm_pool)

        def rows(p=p) -> list[DistillateRow]:
            got = run_programs(p, make_executor(sandbox))
            return [distillate(ref, "cover_outcomes", 0, {"prob_id": p.task_id, "outcomes": got}, p.task_id)]

        p.outcomes = json.loads(once(ref, "distillates", "execute", key, rows)[0].content)["outcomes"]
        out.append(p)
        reporter().advance(1, f"executed {p.task_id}")
    return out


def llm_row(ref: RunRef, task_row: dict) -> DistillateRow:
    """The endpoint's inputs for one problem (`cover_inputs.txt`), why none, its tokens; the
    raw answer is the blob at the row's `uri`."""
    config = run_config(ref)
    rng = random.Random(seed_for(config.seed, "cover-llm", task_row["task_id"]))
    args, why, answer = llm_arguments(task_row["spec"], task_row["kinds"], section(ref).pool_size, config.evolve,
                                      rng, prompt="cover_inputs.txt")
    store = store_for(ref.store_uri)
    body = {"prob_id": task_row["task_id"], "inputs": args, "why_none": why, "tokens_in": answer.tokens_in,
            "tokens_out": answer.tokens_out}
    written = distillate(ref, "cover_llm_inputs", 0, body, "llm", task_row["task_id"])
    return written.model_copy(update={"uri": store.blob_uri(store.put_blob(answer.text.encode()))})


def step_rows(ref: RunRef, step: int, problems: list[Problem], records: list[dict], code, test) -> list[DistillateRow]:
    """The rows of one step's records and the policies after it."""
    out = []
    for p, rec in zip(problems, records):
        for k, (q, op, gt) in enumerate(zip(rec["programs"], rec["operators"], rec["code_rewards"])):
            out.append(distillate(ref, "cover_program", step, {"step": step, "prob_id": p.task_id, "prog_id": k, "operator": op,
                                                        "candidate_id": p.ids[q], "gt_pass_frac": gt}, p.task_id, k))
            out.append(distillate(ref, "cover_exec", step, {"step": step, "prob_id": p.task_id, "prog_id": k,
                                                     "passed": [t["passed"][k] for t in rec["tests"]]}, "x", p.task_id, k))
        for k, t in enumerate(rec["tests"]):
            body = {key: t[key] for key in ("generator", "valid", "kept", "drop_reason", "mi", "cov_sign", "reward",
                                             "trivial", "expected")}
            out.append(distillate(ref, "cover_test", step, {**body, "step": step, "prob_id": p.task_id, "test_id": k,
                                                     "input_hash": content_id(t["input"])}, "t", p.task_id, k))
    for role, logits, names in (("code", code, OPERATORS), ("test", test, problems[0].generators)):
        probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        out.append(distillate(ref, "cover_policy", step, {"step": step, "role": role, "actions": list(names),
                                                   "logits": [float(x) for x in logits],
                                                   "probs": [float(x) for x in probs]}, role))
    return out


@task(name="train", **STAGE_OPTIONS)
def train(ref: RunRef, step: int, problems: list[Problem], code: list[float], test: list[float]) -> tuple[list, list]:
    """sample + execute (lookup) + score + distill + one REINFORCE step of both roles;
    returns the policies after the step (read back on a rerun)."""
    s = section(ref)

    def rows() -> list[DistillateRow]:
        rng = np.random.default_rng(seed_for(run_config(ref).seed, "cover", step))
        c, t, records = train_step(problems, np.asarray(code, float), np.asarray(test, float), arm_of(ref),
                                   s.programs, s.tests, rng)
        return step_rows(ref, step, problems, records, c, t)

    published = once(ref, "distillates", "train", f"s{step:04d}", rows)
    policy = {json.loads(r.content)["role"]: json.loads(r.content)["logits"] for r in published
              if r.kind == "cover_policy"}
    reporter().advance(1, f"step {step}")
    return policy["code"], policy["test"]
