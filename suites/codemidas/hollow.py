"""Hollowing a function by AST (CodeMidas, "sample"): find a self-contained top-level
function in a module's source, write its spec from the signature and docstring, and
replace its body by a stub that raises. Pure: source text in, source text out.

Deviation from the paper: an agent there hollows any symbol and patches the project so
that it stays developable; here only functions whose free names are builtins are taken
(no module globals, no I/O builtins), so the function's own source is the whole task."""

from __future__ import annotations

import ast
import builtins
import hashlib
from dataclasses import dataclass

FORBIDDEN = frozenset({"print", "open", "input", "exec", "eval", "compile", "__import__", "globals",
                       "locals", "vars", "breakpoint", "exit", "quit", "help", "id", "hash", "memoryview"})
"""Builtins a task function may not use: I/O, reflection and results that vary per process."""
BUILTIN_NAMES = frozenset(dir(builtins)) - FORBIDDEN


@dataclass(frozen=True)
class Function:
    """One task function: its name, required positional parameters, annotations (source
    text or None), the original source and the spec (signature + docstring)."""

    name: str
    params: tuple[str, ...]
    annotations: tuple[str | None, ...]
    source: str
    spec: str


def free_names(node: ast.FunctionDef) -> set[str]:
    """Names the function loads that it does not bind (parameters, assignments, loop and
    comprehension targets, imports, nested definitions)."""
    bound = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    bound |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
    loaded = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loaded if isinstance(sub.ctx, ast.Load) else bound).add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
            bound.add(sub.name)
        elif isinstance(sub, ast.alias):
            bound.add((sub.asname or sub.name).split(".")[0])
        elif isinstance(sub, ast.arg):
            bound.add(sub.arg)
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            bound.add(sub.name)
    return loaded - bound


def why_not_task(node: ast.FunctionDef) -> str | None:
    """Why a function cannot be a task (None: it can)."""
    args = node.args
    if node.decorator_list:
        return "decorated"
    if args.vararg or args.kwarg or args.kwonlyargs and len(args.kw_defaults) != sum(d is not None for d in args.kw_defaults):
        return "variadic or required keyword-only parameters"
    required = len(args.posonlyargs) + len(args.args) - len(args.defaults)
    if not 1 <= required <= 3:
        return f"{required} required parameters (1-3 taken)"
    if any(isinstance(s, (ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal)) for s in ast.walk(node)):
        return "generator, coroutine or global/nonlocal"
    if len(body_without_docstring(node)) < 2:
        return "body shorter than 2 statements"
    free = free_names(node) - BUILTIN_NAMES
    if free:
        return f"uses names outside the function: {sorted(free)[:4]}"
    return None


def body_without_docstring(node: ast.FunctionDef) -> list[ast.stmt]:
    """The function's statements after its docstring."""
    return node.body[1:] if ast.get_docstring(node, clean=False) is not None else node.body


def spec_of(node: ast.FunctionDef) -> str:
    """The task's spec: the signature line and the docstring (or a note that there is none)."""
    stub = ast.FunctionDef(name=node.name, args=node.args, body=[ast.Expr(ast.Constant(...))],
                           decorator_list=[], returns=node.returns, type_params=[])
    signature = ast.unparse(ast.fix_missing_locations(stub)).splitlines()[0]
    doc = ast.get_docstring(node) or "(no docstring: the behaviour is defined by the hidden tests)"
    return f"{signature}\n{doc}"


def hollow(source: str) -> str:
    """The stub of a function's source: its signature and docstring, body replaced by
    ``raise NotImplementedError``."""
    node = ast.parse(source).body[0]
    doc = ast.get_docstring(node, clean=False)
    node.body = ([ast.Expr(ast.Constant(doc))] if doc is not None else []) + [
        ast.Raise(ast.Call(ast.Name("NotImplementedError", ast.Load()), [], []), None)]
    return ast.unparse(ast.fix_missing_locations(node)) + "\n"


def task_functions(module_source: str) -> tuple[list[Function], dict[str, str]]:
    """The module's top-level functions that can be tasks, and for each one that
    cannot, why (name -> reason)."""
    tree = ast.parse(module_source)
    kept, dropped = [], {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        reason = why_not_task(node)
        if reason is not None:
            dropped[node.name] = reason
            continue
        positional = [*node.args.posonlyargs, *node.args.args]
        required = positional[: len(positional) - len(node.args.defaults)]
        source = ast.unparse(node) + "\n"
        kept.append(Function(node.name, tuple(a.arg for a in required),
                             tuple(ast.unparse(a.annotation) if a.annotation else None for a in required),
                             source, spec_of(node)))
    return kept, dropped


def sha256_text(text: str) -> str:
    """sha256 hex digest of a text (UTF-8)."""
    return hashlib.sha256(text.encode()).hexdigest()
