"""Constructing one environment and running its checks (CodeMidas "sample", "gate 1",
"execute", "score", "gate 2") on a sandbox executor; no Prefect, no store. Reuses the
suite's building blocks (`suites.codemidas`): hollowing, fuzz tests derived from the
original, mutants, the retrieval solver; every program runs only in the sandbox."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Sequence

from suites.codemidas.build import Built, derive, outcomes, run_programs
from suites.codemidas.hollow import Function, sha256_text, task_functions
from suites.codemidas.mutants import retrieval
from suites.executors.base import Executor
from tasks.loops.codemidas.envset import environment
from tasks.loops.codemidas.filters import RETRIEVAL, attempts, decide, holdout_holds, split_record

LANG = "python"


def source_function(candidate_id: str) -> tuple[Function, str, str]:
    """(the function, its module, the module source's sha256) of ``module::function``."""
    module, name = candidate_id.split("::")
    source = inspect.getsource(importlib.import_module(module))
    functions = {f.name: f for f in task_functions(source)[0]}
    if name not in functions:
        raise ValueError(f"{candidate_id} is not a task function of the installed {module}")
    return functions[name], module, sha256_text(source)


def add_inputs(executor: Executor, built: Built, extra: Sequence[list]) -> int:
    """Append tests for ``extra`` argument lists (expected: the original's outcome, run in
    the sandbox; a failed run adds nothing); returns how many were added."""
    known = {repr(t["args"]) for t in built.tests}
    fresh = [a for a in extra if repr(a) not in known]
    got = outcomes(executor, built.reference, built.name, fresh) if fresh else []
    added = [{"args": a, "expect": o} for a, o in zip(fresh, got) if o is not None]
    built.tests += added
    return len(added)


def construct(executor: Executor, candidate_id: str, seed: int, n_tests: int, site_limit: int,
              drop_leaky: bool, extra_inputs=None) -> dict[str, Any]:
    """Build one candidate's environment and check it. ``extra_inputs(built)`` (the llm
    path) returns (argument lists, note). Returns the candidate row, the per-split check
    rows, the attempt rows, the gate's evidence and (kept) the environment document."""
    function, module, sha = source_function(candidate_id)
    built = derive(executor, function, module, sha, seed, n_tests)
    note = None
    if not built.record and extra_inputs is not None:
        args, why = extra_inputs(built)
        note = f"llm inputs: {add_inputs(executor, built, args)} added" + (f" ({why})" if why else "")
    row = {"cand_id": candidate_id, "repo": module, "lang": LANG, "domain": f"stdlib/{module}",
           "symbol": function.name, "tests": len(built.tests), "inputs_note": note}
    if built.record:
        return {"candidate": {**row, **built.record}, "checks": [], "attempts": [], "evidence": dict(built.record),
                "environment": None}
    expected = [t["expect"] for t in built.tests]
    got = run_programs(executor, built, {RETRIEVAL: retrieval(module, function.name, len(built.kinds))}, site_limit)
    gate1 = {split: split_record(got, expected, split) for split in ("select", "holdout")}
    tries = attempts(got, expected)
    stage, reason = decide(gate1["select"], tries, drop_leaky)
    checks = [{"cand_id": candidate_id, "split": split, **{k: v for k, v in r.items() if k != "killed"}}
              for split, r in gate1.items()]
    evidence = {"stage_reached": stage, "drop_reason": reason, "gate1_select": gate1["select"],
                "holdout_holds": holdout_holds(gate1["holdout"]), "kinds": built.kinds,
                "attempt_rewards": {t["solver"]: t["select_pass"] for t in tries}}
    return {"candidate": {**row, "stage_reached": stage, "drop_reason": reason}, "checks": checks,
            "attempts": [{"cand_id": candidate_id, **t} for t in tries], "evidence": evidence,
            "environment": environment(built) if stage == "kept" else None}
