"""MASS on toolsim as pure functions of their arguments (no store, no Prefect; the stage
tasks and the findings script call them). Episodes are simulated in process: workflows
compile to harnesses of our own rule menu (trusted), no candidate code runs.

    inner, per generation:
        sample:  n mutated children of the current workflow (or the LLM optimizer's edits)
        execute: each runs every train case (the same noise as its parent: paired)
        score:   pairwise per case, by outcome checker then call cost (the paper's
                 self-evaluation replaced by the checker: a stated deviation)
        gate:    the child with the most net wins replaces the parent if it is not worse
                 (net wins >= 0: neutral moves are kept, so a planner field and the
                 worker that needs it can arrive in two steps)
    outer (distill):
        rerun the lineage's workflows on train cases under `repeats` noise seeds; per
        (case, repeat) the pairwise-best execution (the latest on a tie), kept only if
        it succeeded (the filter); SFT examples = (template, the rules its workers applied), workflow removed
    register: behaviour-clone the policy on the examples"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

from suites.base import Case
from suites.toolsim.episode import run_episode
from suites.toolsim.harness import parse_harness
from suites.toolsim.suite import reseeded
from schemas.ids import seed_for
from tasks.harness_loops.menu import OPTION_IDS, harness_document
from tasks.loops.mass import policy as pol
from tasks.loops.mass.workflow import Workflow, decisions, harness_of


@dataclass(frozen=True)
class Execution:
    case_id: str
    template: str
    success: bool
    calls: int
    """Tool calls: the call cost (toolsim's out-token analog)."""
    delegations: int
    """Steps a worker's rule caused (the delegation calls)."""
    applied: tuple[int, ...]
    """Per menu rule, 1 when it was on in the harness."""


def execute(case: Case, harness: dict, applied: Sequence[int]) -> Execution:
    episode = run_episode(case.payload, parse_harness(harness))
    fired = [json.loads(s["result_json"]).get("via") for s in episode.steps]
    return Execution(case.case_id, case.payload["template"], bool(episode.evaluation.success), episode.tool_calls,
                     sum(v in OPTION_IDS for v in fired), tuple(applied))


def run_workflow(wf: Workflow, cases: Sequence[Case]) -> list[Execution]:
    return [execute(c, harness_of(wf), decisions(wf)) for c in cases]


def run_choices(choices: Sequence[int], case: Case) -> Execution:
    """One case under the rules a policy chose for it."""
    return execute(case, harness_document(choices), choices)


def judge(a: Execution, b: Execution) -> str:
    """'a', 'b' or 'tie': success first, then fewer tool calls."""
    ka, kb = (a.success, -a.calls), (b.success, -b.calls)
    return "a" if ka > kb else "b" if kb > ka else "tie"


def tally(a: Sequence[Execution], b: Sequence[Execution]) -> tuple[int, int, int]:
    """(a wins, b wins, ties) over the cases both ran, paired by case."""
    theirs = {e.case_id: e for e in b}
    verdicts = [judge(e, theirs[e.case_id]) for e in a if e.case_id in theirs]
    return verdicts.count("a"), verdicts.count("b"), verdicts.count("tie")


Proposer = Callable[[Workflow, Sequence[Execution], int], list[tuple[str, Workflow]]]
"""(parent, its train executions, generation) -> (operator, child) pairs."""


@dataclass(frozen=True)
class Generation:
    parent: Workflow
    children: tuple[tuple[str, Workflow], ...]
    executions: dict[str, list[Execution]]
    """wf_id -> its train executions (the parent's included)."""
    tallies: dict[str, tuple[int, int, int]]
    """child wf_id -> (child wins, parent wins, ties)."""
    chosen: Workflow


def generation(parent: Workflow, cases: Sequence[Case], propose: Proposer, gen: int,
               known: dict[str, list[Execution]] | None = None) -> Generation:
    """sample, execute, score and gate one inner generation (see the module docstring)."""
    known = dict(known or {})
    parent_runs = known.get(parent.wf_id) or run_workflow(parent, cases)
    runs = {parent.wf_id: parent_runs}
    kids = tuple(propose(parent, parent_runs, gen))
    tallies: dict[str, tuple[int, int, int]] = {}
    for _, child in kids:
        runs.setdefault(child.wf_id, known.get(child.wf_id) or run_workflow(child, cases))
        tallies[child.wf_id] = tally(runs[child.wf_id], parent_runs)
    return Generation(parent, kids, runs, tallies, choose(parent, [k for _, k in kids], tallies))


def choose(parent: Workflow, kids: Sequence[Workflow], tallies: dict[str, tuple[int, int, int]]) -> Workflow:
    """The gate: the child with the most net wins (the first on a tie) if not worse, else the parent."""
    best = max(kids, key=lambda k: tallies[k.wf_id][0] - tallies[k.wf_id][1], default=None)
    if best is not None and tallies[best.wf_id][0] >= tallies[best.wf_id][1]:
        return best
    return parent


@dataclass(frozen=True)
class Example:
    case_id: str
    repeat: int
    wf_id: str
    template: str
    target: tuple[int, ...]
    execution: Execution


def distill(lineage: Sequence[Workflow], cases: Sequence[Case], repeats: int, seed: int) -> tuple[list[Example], int]:
    """(SFT examples, executions run): per (case, repeat), the pairwise-best of the
    lineage's executions under that repeat's noise (the later, more evolved workflow on
    a tie: the selected workflow is the main source, an earlier one only where it was
    strictly better), kept if it succeeded."""
    examples, runs = [], 0
    for case in cases:
        for rep in range(repeats):
            noisy = reseeded(case, seed_for(seed, "mass-distill", case.case_id, rep)) if rep else case
            best: tuple[Workflow, Execution] | None = None
            for wf in lineage:
                e = run_workflow(wf, [noisy])[0]
                runs += 1
                if best is None or judge(e, best[1]) != "b":
                    best = (wf, e)
            if best is not None and best[1].success:
                examples.append(Example(case.case_id, rep, best[0].wf_id, case.payload["template"], best[1].applied,
                                        best[1]))
    return examples, runs


def union(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """The rules either side applies (a policy executing a workflow: its own choices plus
    the workflow's; the optimizer check runs new workflows on the old policy this way)."""
    return tuple(int(x or y) for x, y in zip(a, b))


def run_policy(policy: pol.RulePolicy, cases: Sequence[Case], workflow: Workflow | None = None) -> list[Execution]:
    """Every case under the policy's greedy rules (with ``workflow``: plus the workflow's)."""
    extra = decisions(workflow) if workflow is not None else (0,) * len(OPTION_IDS)
    return [run_choices(union(pol.greedy(policy, c.payload["template"]), extra), c) for c in cases]
