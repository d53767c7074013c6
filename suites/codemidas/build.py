"""Building reliably graded tasks from installed Python source (CodeMidas "sample" and
"gate 1"). Per function: probe which fuzz types the original accepts, derive tests by
running the original on fuzz inputs in the sandbox (expected outcome = what it returned
or raised), run the original again in a fresh sandbox (it must pass every test: a
function that depends on time, randomness or the process is dropped), then the hollowed
stub and the mutants. A task is kept only when the original passes, the stub fails and
every trivial mutant is killed; the record of each check is kept with the task, and with
every dropped candidate.

Deviation from the paper: no agent writes the spec or chooses the inputs (the spec is
the signature and docstring, inputs are fuzzed by type), and there is no reviewer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from suites.base import Case, CaseResult
from suites.codemidas import fuzz
from suites.codemidas.hollow import Function, hollow
from suites.codemidas.mutants import TRIVIAL, all_mutants
from suites.executors.base import Executor

PROBES_PER_ASSIGNMENT = 4


@dataclass
class Built:
    """One candidate function and what the build found. ``tests`` holds (args, expected
    outcome) pairs; ``record`` the per-check evidence (see `check`)."""

    task_id: str
    module: str
    module_sha256: str
    name: str
    spec: str
    reference: str
    stub: str
    kinds: list[str] = field(default_factory=list)
    tests: list[dict[str, Any]] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def kept(self) -> bool:
        return self.record.get("stage_reached") == "kept"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def outcomes(executor: Executor, program: str, entrypoint: str, arg_lists: Sequence[list]) -> list[str | None]:
    """Run ``program.<entrypoint>`` on each argument list in one sandbox batch: the
    comparable outcome per list, None where the run itself failed (timeout, crash, an
    output that is not the runner's)."""
    cases = [Case(f"t{i:03d}", "train", {"args": args}) for i, args in enumerate(arg_lists)]
    results: list[CaseResult] = executor.run(program, fuzz.RUNNER, entrypoint, cases)
    return [fuzz.outcome(r.output) if r.status == "ok" else None for r in results]


def pass_fraction(got: Sequence[str | None], expected: Sequence[str]) -> float:
    """Share of tests whose outcome equals the expected one (a failed run fails)."""
    return sum(g is not None and g == e for g, e in zip(got, expected, strict=True)) / max(len(expected), 1)


def choose_kinds(executor: Executor, function: Function, seed: int) -> tuple[tuple[str, ...] | None, int]:
    """The type assignment under which the original returns most often on probe inputs
    (the first such in `fuzz.assignments` order), and its count of returns; None when no
    assignment returns on at least half of its probes."""
    plans = fuzz.assignments(function.annotations)
    probes = [(kinds, args) for kinds in plans
              for args in fuzz.arguments(kinds, seed, f"probe:{function.name}", PROBES_PER_ASSIGNMENT)]
    got = outcomes(executor, function.source, function.name, [args for _, args in probes])
    returns = {kinds: 0 for kinds in plans}
    for (kinds, _), outcome in zip(probes, got):
        returns[kinds] += outcome is not None and outcome.startswith("returns:")
    best = max(plans, key=lambda kinds: returns[kinds])
    return (best if 2 * returns[best] >= PROBES_PER_ASSIGNMENT else None), returns[best]


def programs(built: Built, site_limit: int = 12) -> dict[str, str]:
    """The programs gate 1 runs, by name: the original, the hollowed stub, every mutant."""
    return {"reference": built.reference, "stub": built.stub,
            **{m.name: m.source for m in all_mutants(built.reference, site_limit)}}


def record_of(got: dict[str, Sequence[str | None]], expected: Sequence[str]) -> dict[str, Any]:
    """Gate 1's record from each program's outcomes (see `programs`) on the tests whose
    expected outcomes are ``expected``. A mutant is killed when it fails at least one test.
    Pure."""
    ref = pass_fraction(got["reference"], expected)
    stub = pass_fraction(got["stub"], expected)
    killed = {name: pass_fraction(outs, expected) < 1.0 for name, outs in got.items()
              if name not in ("reference", "stub")}
    site = [name for name in killed if name not in TRIVIAL]
    return {
        "ref_pass_fraction": ref, "ref_passes": ref == 1.0,
        "stub_pass_fraction": stub, "hollow_fails": stub < 1.0,
        "trivial_killed": all(killed[name] for name in TRIVIAL),
        "mutants": len(killed), "mutants_killed": sum(killed.values()),
        "mutation_score": sum(killed.values()) / len(killed),
        "site_mutation_score": (sum(killed[n] for n in site) / len(site)) if site else None,
        "killed": killed,
    }


def run_programs(executor: Executor, built: Built, extra: dict[str, str] | None = None,
                 site_limit: int = 12) -> dict[str, list[str | None]]:
    """Each program of `programs` (and ``extra`` ones), run in a fresh sandbox batch on
    every test's arguments: its outcomes."""
    args = [t["args"] for t in built.tests]
    return {name: outcomes(executor, source, built.name, args)
            for name, source in {**programs(built, site_limit), **(extra or {})}.items()}


def check(executor: Executor, built: Built) -> dict[str, Any]:
    """Gate 1 and the mutation score: the original re-run in a fresh sandbox, the stub,
    every mutant."""
    return record_of(run_programs(executor, built), [t["expect"] for t in built.tests])


def verdict(record: dict[str, Any]) -> str | None:
    """Why a checked task is dropped (None: kept)."""
    if not record["ref_passes"]:
        return "original does not pass its own tests again (nondeterministic)"
    if not record["hollow_fails"]:
        return "hollowed stub passes every test"
    if not record["trivial_killed"]:
        return "a trivial mutant passes every test"
    return None


def derive(executor: Executor, function: Function, module: str, module_sha256: str,
           seed: int, n_tests: int) -> Built:
    """Probe and derive one function's tests (``record`` says why when it is dropped
    before gate 1; empty when it reaches it)."""
    built = Built(f"{module}::{function.name}", module, module_sha256, function.name, function.spec,
                  function.source, hollow(function.source))
    kinds, _ = choose_kinds(executor, function, seed)
    if kinds is None:
        built.record = {"stage_reached": "probe", "drop_reason": "no fuzz type assignment the original accepts"}
        return built
    built.kinds = list(kinds)
    arg_lists = fuzz.arguments(kinds, seed, function.name, n_tests)
    got = outcomes(executor, function.source, function.name, arg_lists)
    built.tests = [{"args": a, "expect": o} for a, o in zip(arg_lists, got) if o is not None]
    if len(built.tests) < max(4, n_tests // 2):
        built.record = {"stage_reached": "derive", "drop_reason": f"only {len(built.tests)} stable tests"}
    return built


def build_function(executor: Executor, function: Function, module: str, module_sha256: str,
                   seed: int, n_tests: int) -> Built:
    """Probe, derive, check and filter one function (see the module docstring)."""
    built = derive(executor, function, module, module_sha256, seed, n_tests)
    if built.record:
        return built
    record = check(executor, built)
    reason = verdict(record)
    built.record = {**record, "stage_reached": "gate1" if reason else "kept", "drop_reason": reason}
    return built


def build_modules(executor: Executor, modules: Sequence[str], seed: int = 0, n_tests: int = 24,
                  only: Sequence[str] = ()) -> list[Built]:
    """Build every task function of the named installed modules (``only``: restrict to
    these ``module::function`` ids), in module then source order."""
    import importlib
    import inspect

    from suites.codemidas.hollow import sha256_text, task_functions

    built = []
    for module in modules:
        source = inspect.getsource(importlib.import_module(module))
        functions, _ = task_functions(source)
        for function in functions:
            if only and f"{module}::{function.name}" not in only:
                continue
            built.append(build_function(executor, function, module, sha256_text(source), seed, n_tests))
    return built
