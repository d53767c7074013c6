"""The test role's scoring, filter and the anti-collapse checks (CoVer "score",
"distill", "gate"), pure.

A test is an input plus an expected outcome; the expected outcome is the plurality
outcome of the current programs on the input (no program knows the original). A test's
pass/fail vector over the programs is compared with the graded GT signal (each program's
pass fraction on the frozen GT tests):

    pass_rate:  reward = the share of programs that pass (rewards going easy)
    mi_cov:     reward = I(pass; gt) in bits when cov(pass, gt) > 0, else 0

The filter keeps a test only when it is valid, its input was not seen before and its
pass/fail vector differs from every kept test's; a dropped test earns no reward and its
reason is recorded. A test that every program passes is trivial: it cannot separate
anything."""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

REWARDS = ("pass_rate", "mi_cov")


def plurality(outcomes: Sequence[str | None]) -> str | None:
    """The most common outcome among the runs that produced one (a tie: the smallest
    text); None when no run did."""
    counts = Counter(o for o in outcomes if o is not None)
    if not counts:
        return None
    return min(counts, key=lambda o: (-counts[o], o))


def passes(outcomes: Sequence[str | None], expected: str | None) -> list[int]:
    """1 where a program's outcome equals the expected one (a failed run fails)."""
    return [int(expected is not None and o == expected) for o in outcomes]


def mutual_information(x: Sequence[int], y: Sequence[float]) -> float:
    """Plug-in mutual information in bits between two discrete sequences."""
    n = len(x)
    joint, px, py = Counter(zip(x, y)), Counter(x), Counter(y)
    return sum(c / n * math.log2(c * n / (px[a] * py[b])) for (a, b), c in joint.items()) if n else 0.0


def covariance(x: Sequence[float], y: Sequence[float]) -> float:
    """Population covariance."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    return sum((a - mx) * (b - my) for a, b in zip(x, y)) / n


def test_reward(passed: Sequence[int], gt: Sequence[float], kind: str) -> tuple[float, float, int]:
    """(reward, mi, cov_sign) of one test's pass vector against the programs' GT pass
    fractions under reward ``kind`` (`REWARDS`)."""
    mi, cov = mutual_information(passed, gt), covariance(passed, gt)
    sign = (cov > 1e-12) - (cov < -1e-12)
    if kind == "pass_rate":
        return sum(passed) / len(passed), mi, sign
    if kind == "mi_cov":
        return (mi if sign > 0 else 0.0), mi, sign
    raise ValueError(f"unknown test reward {kind!r}; known: {REWARDS}")


def diversity_filter(valid: Sequence[bool], input_keys: Sequence[str],
                     vectors: Sequence[Sequence[int]]) -> list[str | None]:
    """Per test, why the filter drops it (None: kept), in the paper's three stages:
    invalid, a duplicate input, the same behaviour on the current programs as a kept test."""
    reasons, seen_inputs, seen_vectors = [], set(), {}
    for index, (ok, key, vector) in enumerate(zip(valid, input_keys, vectors)):
        if not ok:
            reasons.append("invalid: no program produced an outcome")
        elif key in seen_inputs:
            reasons.append("duplicate input")
        elif tuple(vector) in seen_vectors:
            reasons.append(f"same behaviour as test {seen_vectors[tuple(vector)]}")
        else:
            seen_vectors[tuple(vector)] = index
            reasons.append(None)
        seen_inputs.add(key)
    return reasons


def is_trivial(passed: Sequence[int]) -> bool:
    """Every program passes: the test separates nothing."""
    return all(passed)


def auc(scores: Sequence[float], positive: Sequence[bool]) -> float:
    """P(score of a random positive > a random negative), ties count half; nan without
    both classes."""
    pos = [s for s, p in zip(scores, positive) if p]
    neg = [s for s, p in zip(scores, positive) if not p]
    if not pos or not neg:
        return math.nan
    return sum((a > b) + 0.5 * (a == b) for a in pos for b in neg) / (len(pos) * len(neg))


def rerank_accuracy(scores: Sequence[float], correct: Sequence[bool]) -> float:
    """CodeT-style best-of-n: the chance that the top-scored program (ties drawn
    uniformly) is correct."""
    top = max(scores)
    tied = [c for s, c in zip(scores, correct) if s == top]
    return sum(tied) / len(tied)


def suite_verdict(vectors: Sequence[Sequence[int]], original: int, max_trivial: float) -> tuple[str | None, dict]:
    """The anti-collapse check of a test suite on a program set (``vectors[t][p]``: test t
    passes program p; ``original`` the reference's index): why it is rejected (None:
    accepted) and the evidence."""
    n = len(vectors)
    trivial = sum(is_trivial(v) for v in vectors)
    killed = [p for p in range(len(vectors[0]) if vectors else 0) if p != original and not all(v[p] for v in vectors)]
    fails_original = [t for t, v in enumerate(vectors) if not v[original]]
    evidence = {"tests": n, "trivial": trivial, "trivial_share": trivial / n if n else None,
                "programs_killed": len(killed), "original_fails": fails_original}
    if not n:
        return "no test survived the filter", evidence
    if trivial / n > max_trivial:
        return f"{trivial}/{n} tests pass every program (over {max_trivial:.0%}): collapsed to trivial", evidence
    if not killed:
        return "the suite kills no mutant", evidence
    return None, evidence
