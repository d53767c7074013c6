"""One CoVer training step and the evaluation of a pair of policies, pure over problems
whose sandbox outcomes are attached (`Problem.outcomes`).

Step, per problem: the code role draws `programs` operators (a program is a uniformly
drawn mutant of that operator, or the original) and is rewarded by its GT train pass
fraction; the test role draws `tests` generators (a test is a uniformly drawn input of
that generator's pool, its expected outcome the programs' plurality) and is rewarded by
`discriminate.test_reward`, zero for a test the filter drops. Both policies then take one
REINFORCE step per problem's group."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tasks.loops.cover import discriminate as d
from tasks.loops.cover.policy import reinforce, sample
from tasks.loops.cover.problems import OPERATORS, Problem, input_key


@dataclass(frozen=True)
class Arm:
    reward: str = "mi_cov"
    filter: bool = True
    code_lr: float = 1.0
    test_lr: float = 1.0


def draw_programs(p: Problem, logits: np.ndarray, n: int, rng: np.random.Generator) -> tuple[list[int], list[int]]:
    """(operator indices, program indices): an operator with no mutant here is redrawn as the original."""
    ops = sample(logits, n, rng)
    programs = []
    for k, op in enumerate(ops):
        choices = p.programs_of(OPERATORS[op]) or [0]
        ops[k] = op if p.programs_of(OPERATORS[op]) else 0
        programs.append(int(choices[rng.integers(len(choices))]))
    return ops, programs


def draw_tests(p: Problem, logits: np.ndarray, n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """(generator index, pool index) per test; a generator with an empty pool (the llm's
    answer held no usable input) is never drawn."""
    empty = [not p.pools[g] for g in p.generators]
    masked = np.where(empty, -np.inf, np.asarray(logits, dtype=float))
    return [(g, int(rng.integers(len(p.pools[p.generators[g]])))) for g in sample(masked, n, rng)]


def judge_tests(p: Problem, programs: Sequence[int], tests: Sequence[tuple[int, int]], arm: Arm) -> list[dict]:
    """Per test: its expected outcome (plurality over ``programs``), pass vector, validity,
    filter reason, MI, covariance sign and reward."""
    gt = [p.gt_pass(q, "train") for q in programs]
    rows = []
    for g, i in tests:
        name = p.generators[g]
        got = [p.outcome(q, name, i) for q in programs]
        expected = d.plurality(got)
        rows.append({"generator": name, "index": i, "input": input_key(p.pools[name][i]),
                     "expected": expected, "valid": expected is not None, "passed": d.passes(got, expected)})
    reasons = d.diversity_filter([r["valid"] for r in rows], [r["input"] for r in rows], [r["passed"] for r in rows])
    for row, reason in zip(rows, reasons):
        reward, mi, sign = d.test_reward(row["passed"], gt, arm.reward)
        kept = reason is None if arm.filter else row["valid"]
        row.update(kept=kept, drop_reason=reason, mi=mi, cov_sign=sign, reward=reward if kept else 0.0,
                   trivial=d.is_trivial(row["passed"]))
    return rows


def train_step(problems: Sequence[Problem], code: np.ndarray, test: np.ndarray, arm: Arm, n_programs: int,
               n_tests: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """One step over every problem: the updated (code, test) logits and one record per
    problem (its programs, tests and both groups' rewards)."""
    records = []
    for p in problems:
        ops, programs = draw_programs(p, code, n_programs, rng)
        tests = draw_tests(p, test, n_tests, rng)
        judged = judge_tests(p, programs, tests, arm)
        code_rewards = [p.gt_pass(q, "train") for q in programs]
        code = reinforce(code, ops, code_rewards, arm.code_lr)
        test = reinforce(test, [g for g, _ in tests], [t["reward"] for t in judged], arm.test_lr)
        records.append({"task_id": p.task_id, "operators": [OPERATORS[o] for o in ops], "programs": programs,
                        "code_rewards": code_rewards, "tests": judged})
    return code, test, records


def evaluate(p: Problem, code: np.ndarray, test: np.ndarray, arm: Arm, candidates: Sequence[int], split: str,
             n_programs: int, n_tests: int, rng: np.random.Generator) -> dict:
    """The policies' test suite on one problem: `tests` drawn, expected outcomes voted by
    `programs` the code policy draws, filtered as the arm filters; then each of the fixed
    ``candidates`` scored by its pass fraction on the suite. Outcomes: the share of trivial
    drawn valid tests that pass every candidate, the suite's AUC separating correct candidates (GT ``split`` pass 1) from
    the rest, best-of-n rerank accuracy, and the anti-collapse verdict."""
    _, voters = draw_programs(p, code, n_programs, rng)
    judged = judge_tests(p, voters, draw_tests(p, test, n_tests, rng), arm)
    valid = [t for t in judged if t["valid"]]
    on_candidates = [d.passes([p.outcome(q, t["generator"], t["index"]) for q in candidates], t["expected"])
                     for t in valid]
    suite = [t for t in valid if t["kept"]]
    vectors = [v for t, v in zip(valid, on_candidates) if t["kept"]]
    scores = [sum(v[k] for v in vectors) / len(vectors) if vectors else 0.0 for k in range(len(candidates))]
    correct = [p.gt_pass(q, split) == 1.0 for q in candidates]
    reason, evidence = d.suite_verdict(vectors, list(candidates).index(0), 1.0) if 0 in candidates else (None, {})
    value = d.auc(scores, correct)
    return {"task_id": p.task_id, "trivial_share": sum(map(d.is_trivial, on_candidates)) /
            max(len(valid), 1), "auc": None if math.isnan(value) else value,
            "rerank": d.rerank_accuracy(scores, correct), "kept": len(suite), "collapse": reason,
            "suite": [{"input": t["input"], "expected": t["expected"]} for t in suite], **evidence}


def candidate_set(p: Problem, n: int, rng: np.random.Generator) -> list[int]:
    """A fixed best-of-n set: the original and ``n - 1`` programs of uniformly drawn operators."""
    return [0] + draw_programs(p, np.zeros(len(OPERATORS)), n - 1, rng)[1]


def train_and_evaluate(problems: Sequence[Problem], arm: Arm, seed: int, steps: int, n_programs: int,
                       n_tests: int, split: str = "select") -> list[dict]:
    """``steps`` training steps from uniform policies, then `evaluate` on every problem with
    a candidate set and an evaluation stream that depend only on (seed, problem): arms of
    one seed are paired."""
    rng = np.random.default_rng(seed)
    code, test = np.zeros(len(OPERATORS)), np.zeros(len(problems[0].generators))
    for _ in range(steps):
        code, test, _ = train_step(problems, code, test, arm, n_programs, n_tests, rng)
    out = []
    for k, p in enumerate(problems):
        candidates = candidate_set(p, n_programs, np.random.default_rng([seed, k, 1]))
        out.append(evaluate(p, code, test, arm, candidates, split, n_programs, n_tests,
                            np.random.default_rng([seed, k, 2])))
    return out
