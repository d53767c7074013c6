"""CodeMidas's filters on one built environment, pure: outcomes in, records out.

Every program (the original, the hollowed stub, each mutant, the retrieval solver) is run
once in the sandbox on all of the environment's tests; the tests are then split by index
(i % 4 == 3 held out). The gates read only the select tests; the held-out tests measure
whether their verdicts hold on tests no gate saw.

- gate 1 (reliability, the paper's): the original passes again in a fresh sandbox, the
  stub fails, the trivial mutants are killed (`suites.codemidas.build.record_of`).
- attempts: each weak solver (the stub and the reference's mutants) is one attempt, its
  reward the pass fraction on the select tests; the retrieval solver is the leak hunt.
- reviewer (trusted, no LLM): an attempt that passes every select test is checked on the
  held-out tests: still passing is `pass_confirmed` (an equivalent mutant), failing is a
  `false_positive` (the tests let a wrong solution through); a failing attempt is
  `fail_confirmed` (expected outcomes are the original's, so a false negative would be
  the original failing, which gate 1 drops).
- gate 2 (difficulty): drop an environment whose every attempt solved it (reward 1) or
  every attempt failed it outright (reward 0): either way the group of rewards has no
  spread, which is what the paper's filter removes before GRPO."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from suites.codemidas.build import pass_fraction, record_of, verdict

RETRIEVAL = "retrieval"
NOT_ATTEMPTS = ("reference", RETRIEVAL)
"""Programs that are not weak-solver attempts: the original and the leak probe."""


def split_of(index: int) -> str:
    """The split of test ``index``: every fourth is held out, the rest are the gates'."""
    return "holdout" if index % 4 == 3 else "select"


def subset(values: Sequence[Any], split: str) -> list[Any]:
    return [v for i, v in enumerate(values) if split_of(i) == split]


def split_record(got: Mapping[str, Sequence[str | None]], expected: Sequence[str], split: str) -> dict[str, Any]:
    """Gate 1's record on one split's tests (the retrieval solver left out)."""
    return record_of({name: subset(outs, split) for name, outs in got.items() if name != RETRIEVAL},
                     subset(expected, split))


def review(select_pass: float, holdout_pass: float) -> str:
    """The trusted reviewer's verdict on one attempt (see the module docstring)."""
    if select_pass < 1.0:
        return "fail_confirmed"
    return "pass_confirmed" if holdout_pass == 1.0 else "false_positive"


def attempts(got: Mapping[str, Sequence[str | None]], expected: Sequence[str]) -> list[dict[str, Any]]:
    """One row per program but the original: its select and held-out pass fractions,
    whether it solved the select tests, whether it is the leak probe and passed, and the
    reviewer's verdict."""
    select, holdout = subset(expected, "select"), subset(expected, "holdout")
    rows = []
    for index, name in enumerate(n for n in got if n != "reference"):
        s = pass_fraction(subset(got[name], "select"), select)
        h = pass_fraction(subset(got[name], "holdout"), holdout)
        rows.append({"attempt": index, "solver": name, "select_pass": s, "holdout_pass": h, "passed": s == 1.0,
                     "leak_found": name == RETRIEVAL and s == 1.0, "reviewer_verdict": review(s, h)})
    return rows


def difficulty(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Gate 2's drop reason over the weak-solver attempts (None: the rewards spread)."""
    rewards = [r["select_pass"] for r in rows if r["solver"] not in NOT_ATTEMPTS]
    if not rewards:
        return "no weak-solver attempt"
    if all(r == 1.0 for r in rewards):
        return f"every attempt solved it ({len(rewards)} attempts)"
    if all(r == 0.0 for r in rewards):
        return f"every attempt failed it ({len(rewards)} attempts)"
    return None


def decide(gate1: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], drop_leaky: bool) -> tuple[str, str | None]:
    """(stage reached, drop reason) of an environment that reached gate 1: gate 1 on the
    select tests, then the leak (when ``drop_leaky``), then gate 2."""
    reason = verdict(gate1)
    if reason:
        return "gate1", reason
    if drop_leaky and any(r["leak_found"] for r in rows):
        return "leak", "the retrieval solver passes (the installed original is importable)"
    reason = difficulty(rows)
    if reason:
        return "gate2", reason
    return "kept", None


def holdout_holds(gate1_holdout: Mapping[str, Any]) -> bool:
    """Whether gate 1's verdict replicates on the held-out tests (the registered set's
    held-out score is the share of its environments for which it does)."""
    return verdict(gate1_holdout) is None
